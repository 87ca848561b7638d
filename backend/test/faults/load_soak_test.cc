// Load and soak against the embedded mock: many commands from many threads
// on one backend plus file operations, every output checked exactly, and
// the process's fds, threads and RSS sampled before and after; then many
// backends created and destroyed with nothing left behind in the mock.
// LIZARD_SOAK_COMMANDS / LIZARD_SOAK_FILE_OPS / LIZARD_SOAK_BACKENDS scale
// it (defaults 2000 / 500 / 100, an eighth under a sanitizer); the figures
// go to stdout for the docs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault_support.h"
#include "lizard/mock/mock_server.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::faults {
namespace {

using lizard::testing::is_create;
using lizard::testing::is_delete;
using lizard::testing::options_for;
using mock::MockServer;
using workspace::Argv;
using workspace::LizardSandboxBackend;
using workspace::Shell;

// Under a sanitizer (the asan/tsan presets) the defaults are cut by 8, so
// `scripts/test --tsan`, which runs this label too, stays within its timeout.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr std::size_t kScale = 8;
#else
constexpr std::size_t kScale = 1;
#endif

std::size_t env_count(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoul(v, nullptr, 10) : fallback / kScale;
}

// Processes whose parent is this process (the mock's sandbox holders and relays).
std::size_t child_processes() {
  std::size_t n = 0;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("PPid:", 0) == 0) {
        if (std::to_string(std::stol(line.substr(5))) == self) ++n;
        break;
      }
    }
  }
  return n;
}

struct Sample {
  std::size_t fds;
  long threads;
  long rss_kib;
};
Sample sample() { return {open_fds(), threads(), rss_kib()}; }

constexpr std::size_t kSoakThreads = 16;

// What the soak's workers found: counts, and the first problem for the report.
class Tally {
 public:
  void mismatch(const std::string& what) {
    ++mismatches_;
    note(what);
  }
  void error(const std::string& what) {
    ++errors_;
    note(what);
  }
  std::size_t mismatches() const { return mismatches_.load(); }
  std::size_t errors() const { return errors_.load(); }
  std::string first_problem() const {
    std::lock_guard lock(mutex_);
    return first_problem_;
  }

 private:
  void note(const std::string& what) {
    std::lock_guard lock(mutex_);
    if (first_problem_.empty()) first_problem_ = what;
  }
  std::atomic<std::size_t> mismatches_{0};
  std::atomic<std::size_t> errors_{0};
  mutable std::mutex mutex_;
  std::string first_problem_;
};

// Command `i` of worker `t`: an argv through sh, a shell string or a plain
// argv in turn, its exit code and both streams checked exactly.
void soak_command(LizardSandboxBackend& backend, std::size_t t, std::size_t i, Tally& tally) {
  try {
    const std::string tag = "t" + std::to_string(t) + "-" + std::to_string(i);
    workspace::CommandResult got;
    workspace::CommandResult want;
    if (i % 3 == 0) {
      got = backend.run(
          Argv{{"/bin/sh", "-c", "printf '%s\\n' \"$1\"; printf 'e%s' \"$1\" >&2; exit $2", "sh",
                tag, std::to_string(i % 7)}});
      want = {static_cast<int>(i % 7), tag + "\n", "e" + tag};
    } else if (i % 3 == 1) {
      got = backend.run(Shell{"echo " + tag + "; echo " + tag + " >&2"});
      want = {0, tag + "\n", tag + "\n"};
    } else {
      got = backend.run(Argv{{"echo", tag, "ü"}});
      want = {0, tag + " ü\n", ""};
    }
    if (!(got == want)) {
      tally.mismatch("command " + tag + ": got out=" + got.out + " err=" + got.err);
    }
  } catch (const std::exception& e) {
    tally.error(std::string("command: ") + e.what());
  }
}

// File op `f`: write, read back, stat, remove, and no longer exists.
void soak_file_op(LizardSandboxBackend& backend, std::size_t f, Tally& tally) {
  try {
    const std::string content = "file-op-" + std::to_string(f) + std::string(f % 97, 'x');
    const std::string own = "/workspace/soak/own" + std::to_string(f);
    backend.write_bytes(own, content);
    if (backend.read_bytes(own) != content) tally.mismatch("file " + own);
    if (backend.stat(own).size != content.size()) tally.mismatch("stat " + own);
    backend.remove(own);
    if (backend.exists(own)) tally.mismatch("still exists " + own);
  } catch (const std::exception& e) {
    tally.error(std::string("file op: ") + e.what());
  }
}

// `commands` commands from kSoakThreads threads, with `file_ops` file ops
// interleaved so that they keep pace with the commands. Returns the file ops done.
std::size_t soak(LizardSandboxBackend& backend, std::size_t commands, std::size_t file_ops,
                 Tally& tally) {
  std::atomic<std::size_t> next_command{0};
  std::atomic<std::size_t> next_file{0};
  std::vector<std::thread> workers;
  for (std::size_t t = 0; t < kSoakThreads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = next_command.fetch_add(1); i < commands; i = next_command.fetch_add(1)) {
        soak_command(backend, t, i, tally);
        const std::size_t due = file_ops * (i + 1) / std::max<std::size_t>(commands, 1);
        while (true) {
          std::size_t f = next_file.load();
          if (f >= due || f >= file_ops) break;
          if (!next_file.compare_exchange_weak(f, f + 1)) continue;
          soak_file_op(backend, f, tally);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  return next_file.load();
}

// The sandbox, and a connection per thread.
void warm_up(LizardSandboxBackend& backend) {
  std::vector<std::thread> warm;
  for (std::size_t t = 0; t < kSoakThreads; ++t) {
    warm.emplace_back([&] { backend.run(Argv{{"true"}}); });
  }
  for (auto& w : warm) w.join();
}

TEST(LoadSoak, ThousandsOfCommandsAndFileOpsFromSixteenThreadsLeakNothing) {
  const std::size_t commands = env_count("LIZARD_SOAK_COMMANDS", 2000);
  const std::size_t file_ops = env_count("LIZARD_SOAK_FILE_OPS", 500);
  MockServer server;
  // One answered request starts the mock's worker pool; this is the level
  // everything must come back to once the backend and its sandbox are gone.
  workspace::LizardSandbox(options_for(server)).destroy({"lizard", "sbx_warm_up"});
  const std::size_t fds_initial = open_fds();
  auto owned = std::make_unique<LizardSandboxBackend>(options_for(server));
  LizardSandboxBackend& backend = *owned;
  warm_up(backend);
  const Sample before = sample();
  const auto start = std::chrono::steady_clock::now();
  Tally tally;
  const std::size_t file_ops_done = soak(backend, commands, file_ops, tally);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  EXPECT_EQ(tally.mismatches(), 0u) << tally.first_problem();
  EXPECT_EQ(tally.errors(), 0u) << tally.first_problem();
  EXPECT_EQ(file_ops_done, file_ops);
  // While the backend lives, libcurl's connection cache may keep more idle
  // connections than at the start (both ends are in this process): bounded
  // by the cache, not by the number of operations.
  EXPECT_LE(open_fds(), before.fds + 2 * kSoakThreads + 8)
      << "fds " << before.fds << " -> " << open_fds();
  EXPECT_TRUE(Eventually([&] { return threads() <= before.threads + 2; }, 60s))
      << "threads " << before.threads << " -> " << threads();
  const Sample after = sample();
  EXPECT_LT(after.rss_kib - before.rss_kib, 64 * 1024) << "RSS grew by more than 64 MiB";
  EXPECT_TRUE(Eventually([&] { return server.live_processes() == 0; }, 60s));
  // Gone with the backend and its sandbox: every fd it used.
  backend.destroy();
  owned.reset();
  EXPECT_TRUE(Eventually([&] { return open_fds() <= fds_initial + 2; }, 60s))
      << "fds at start " << fds_initial << ", after the backend is gone " << open_fds();
  const std::size_t fds_final = open_fds();
  std::cout << "soak: " << commands << " commands + " << file_ops
            << " file ops (write, read, stat, remove, exists) from " << kSoakThreads
            << " threads in " << seconds << " s; fds " << before.fds << " -> " << after.fds
            << ", threads " << before.threads << " -> " << after.threads << ", RSS "
            << before.rss_kib << " -> " << after.rss_kib << " KiB; fds before the backend "
            << fds_initial << ", after it is gone " << fds_final << "\n";
}

TEST(LoadSoak, AHundredBackendsCreatedAndDestroyedLeaveNothingInTheMock) {
  const std::size_t backends = env_count("LIZARD_SOAK_BACKENDS", 100);
  MockServer server;
  {
    LizardSandboxBackend warm(options_for(server));
    warm.run(Argv{{"true"}});
    warm.destroy();
  }
  ASSERT_TRUE(Eventually([&] { return server.live_sandboxes() == 0; }));
  ASSERT_TRUE(Eventually([&] { return child_processes() == 0; }));
  const Sample before = sample();
  std::vector<std::thread> workers;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> failures{0};
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      while (next.fetch_add(1) < backends) {
        try {
          LizardSandboxBackend backend(options_for(server));
          // A background process too: destroy must take it along.
          if (backend.run(Shell{"sleep 30 >/dev/null 2>&1 & echo up"}).out != "up\n") ++failures;
          backend.destroy();
        } catch (const std::exception&) {
          ++failures;
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0u);
  std::size_t creates = 0;
  std::size_t deletes = 0;
  for (const auto& e : server.requests()) {
    if (is_create(e)) ++creates;
    if (is_delete(e) && e.status == 200) ++deletes;
  }
  EXPECT_EQ(creates, backends + 1);
  EXPECT_EQ(deletes, backends + 1);
  EXPECT_TRUE(Eventually([&] { return server.live_sandboxes() == 0; }));
  EXPECT_TRUE(Eventually([&] { return server.live_processes() == 0; }));
  EXPECT_TRUE(Eventually([&] { return child_processes() == 0; }))
      << child_processes() << " processes left behind";
  EXPECT_TRUE(Eventually([&] { return open_fds() <= before.fds + 4; }, 60s))
      << "fds " << before.fds << " -> " << open_fds();
  const Sample after = sample();
  std::cout << "soak: " << backends << " backends created and destroyed; fds " << before.fds
            << " -> " << after.fds << ", threads " << before.threads << " -> " << after.threads
            << ", RSS " << before.rss_kib << " -> " << after.rss_kib << " KiB\n";
}

}  // namespace
}  // namespace lizard::faults
