// The sandbox init program (mockserver/init/) as bytes of the mock library:
// the mock starts it from memory (sandbox_runtime.cc), so an embedding
// program, an installed library or a test binary never has to find a file.
// The build names the binary in LIZARD_SANDBOX_INIT_PATH.
#ifndef LIZARD_SANDBOX_INIT_PATH
#error "LIZARD_SANDBOX_INIT_PATH must name the built lizard-sandbox-init"
#endif

__asm__(
    ".pushsection .rodata\n"
    ".global lizard_sandbox_init_image\n"
    ".type lizard_sandbox_init_image, @object\n"
    ".balign 16\n"
    "lizard_sandbox_init_image:\n"
    ".incbin \"" LIZARD_SANDBOX_INIT_PATH
    "\"\n"
    ".global lizard_sandbox_init_image_end\n"
    ".type lizard_sandbox_init_image_end, @object\n"
    "lizard_sandbox_init_image_end:\n"
    ".popsection\n");
