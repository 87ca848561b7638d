// sandbox-app: a small program on LizardSandboxBackend. It creates a sandbox
// lazily, runs a command with a timeout, writes and reads a file, prints the
// sandbox's ref, reconnects to it by that ref, and destroys it.
//
// The API endpoint and credentials come from the environment:
//   LIZARD_API_KEY      the API key (required)
//   LIZARD_PROJECT_ID   the project (required)
//   LIZARD_API_URL      the API's base URL (default https://lizard.build;
//                       the URL lizard-mock prints to run offline)
// Exit status: 0 when every step worked, 1 when one failed (the error is
// printed), 2 when the configuration is missing.
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "lizard/workspace/errors.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lw = lizard::workspace;

namespace {

int demo(const lw::LizardOptions& options) {
  // 1. Building the backend sends nothing; the sandbox is created by the
  //    first operation.
  lw::LizardSandboxBackend backend(options);
  std::cout << "backend built, ref before first use: "
            << (backend.ref() ? backend.ref()->to_string() : "(none yet)") << "\n";

  // 2. A command with a timeout (the first operation: creates the sandbox).
  lw::RunOptions run_options;
  run_options.timeout = lw::Seconds(30);
  run_options.env = {{"GREETING", "hello from the host"}};
  const lw::CommandResult hello =
      backend.run(lw::Shell{"echo \"$GREETING\"; uname -s; pwd"}, run_options);
  std::cout << "run: exit " << hello.exit_code << "\n" << hello.out;

  // A command over its timeout is an error that keeps what it printed.
  run_options.timeout = lw::Seconds(1);
  try {
    backend.run(lw::Shell{"echo started; sleep 30"}, run_options);
  } catch (const lw::WorkspaceTimeoutError& e) {
    std::cout << "timeout after " << e.timeout().count() << " s, partial output: " << e.out();
  }

  // 3. Files: write, then read back through the files API and a command.
  const std::string path = backend.working_dir() + "/notes/hello.txt";
  backend.write_bytes(path, "written by sandbox-app\n");
  std::cout << "read back: " << backend.read_bytes(path);
  std::cout << "cat: " << backend.run(lw::Argv{{"cat", path}}).out;

  // 4. The ref names the sandbox; it can be stored and used from another process.
  const lw::WorkspaceRef ref = *backend.ref();
  std::cout << "ref: " << ref.to_string() << "\n";

  // 5. Reconnect by ref: a new backend object on the same sandbox.
  lw::LizardOptions attach_options = options;
  attach_options.ref = ref;
  lw::LizardSandboxBackend again(attach_options);
  std::cout << "reconnected, the file is still there: " << again.read_bytes(path);

  // 6. Destroy: the sandbox is deleted; the old backend sees it gone.
  again.destroy();
  try {
    backend.read_bytes(path);
    std::cout << "error: the sandbox is still there after destroy()\n";
    return 1;
  } catch (const lw::WorkspaceUnavailableError&) {
    std::cout << "destroyed: " << ref.to_string() << "\n";
  }
  return 0;
}

}  // namespace

int main() {
  const lw::LizardOptions options = lw::LizardOptions::from_environment();
  try {
    return demo(options);
  } catch (const std::invalid_argument& e) {
    // Missing credentials, a bad size or lifetime: the options are wrong.
    std::cerr << "sandbox-app: " << e.what() << "\n";
    return 2;
  } catch (const lw::WorkspaceAuthenticationError& e) {
    std::cerr << "sandbox-app: the API rejected the credentials: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sandbox-app: " << e.what() << "\n";
    return 1;
  }
}
