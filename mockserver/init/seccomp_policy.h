// The system-call filter every command in a sandbox runs under, built with
// libseccomp. Default: allow. Refused with EPERM (documented in
// docs/mockserver.md, "Isolation"):
//   mounts and the new mount API (mount, umount2, pivot_root, move_mount,
//   open_tree, fsopen, fsconfig, fsmount, fspick, mount_setattr);
//   file handles (open_by_handle_at, name_to_handle_at);
//   kernel and machine state (kexec_load, kexec_file_load, init_module,
//   finit_module, delete_module, reboot, swapon, swapoff, acct,
//   settimeofday, clock_settime, clock_adjtime, adjtimex, syslog, quotactl,
//   quotactl_fd, nfsservctl, iopl, ioperm, lookup_dcookie, uselib, ustat,
//   sysfs, _sysctl, vhangup);
//   kernel attack surface (bpf, perf_event_open, userfaultfd, keyctl,
//   add_key, request_key);
//   namespaces (setns, unshare, and clone with any CLONE_NEW* flag);
// and clone3 answers ENOSYS, so that the C library falls back to clone,
// whose flags the filter can read. System calls of other ABIs (32-bit x86,
// x32) kill the caller.
#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

namespace lizard::mock::init {

// The compiled filter, or an empty vector with `error` set.
std::vector<sock_filter> build_command_filter(std::string& error);

}  // namespace lizard::mock::init
