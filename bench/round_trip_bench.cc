// 1. The round trip of a command: run(true) against the process shapes it
// needs, and the mock's exec of `true` against the posix_spawn floor. Each
// pair is measured in alternation (bench_env.h), so that its ratio is that of
// the same machine load.
#include <spawn.h>
#include <sys/wait.h>

#include "bench_env.h"

extern char** environ;

namespace lizard::bench {
namespace {

using workspace::Argv;

// A raw exec: one POST /exec through libcurl, no wrapper, no output files,
// no UTF-8 work.
std::string exec_body(const std::vector<std::string>& argv) {
  std::string body = R"({"cmd":[)";
  for (std::size_t i = 0; i < argv.size(); ++i) body += (i ? "," : "") + json_string(argv[i]);
  return body + R"(],"workdir":"/workspace"})";
}

bool spawn_true() {
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// run(true), a run printing on both streams, the process shapes of a run
// through a raw exec, and a raw exec of true. The 4-program shape is what a
// run's guarantees need (setsid, sh, setsid, true: docs/performance.md); the
// 5-program shape puts a shell in front of it, as run_start.sh does to keep
// the command's text out of every long-lived argument list (the fields move
// into the environment, which the kubernetes era does not let an exec set);
// the 2-program shape is a wrapper shell alone.
void BM_RunTrue(benchmark::State& state) {
  RawCurl curl;
  const std::string raw_true = exec_body({"true"});
  const std::string shape_2 = exec_body({"/bin/sh", "-c", "true & wait $!"});
  const std::string shape_4 = exec_body({"setsid", "-f", "-w", "/bin/sh", "-c",
                                         "setsid -- true </dev/null >/dev/null 2>&1 & wait $!"});
  const std::string shape_5 = exec_body(
      {"/bin/sh", "-c",
       R"(exec setsid -f -w /bin/sh -c "setsid -- true </dev/null >/dev/null 2>&1 & wait \$!")"});
  for (const auto* body : {&raw_true, &shape_2, &shape_4, &shape_5}) curl.exec(*body);  // warm up
  auto& backend = *g_env->backend;
  // A run with a line on each stream: what output adds to run(true)
  // (the command's sh, and a head and a base64 for each stream).
  const workspace::Shell printing{"echo out; echo err >&2"};
  alternate(state, {{"run", [&] { return backend.run(Argv{{"true"}}).exit_code == 0; }},
                    {"printing",
                     [&] {
                       const auto r = backend.run(printing);
                       return r.out == "out\n" && r.err == "err\n";
                     }},
                    {"shape4", [&] { return curl.exec(shape_4); }},
                    {"shape5", [&] { return curl.exec(shape_5); }},
                    {"shape2", [&] { return curl.exec(shape_2); }},
                    {"raw", [&] { return curl.exec(raw_true); }}});
}

// The mock's own cost: a raw exec of true against posix_spawn of /bin/true
// on the host (fork or vfork, exec, wait: what starting a program costs here).
void BM_ExecVsSpawn(benchmark::State& state) {
  RawCurl curl;
  const std::string raw_true = R"({"cmd":["true"]})";
  curl.exec(raw_true);
  alternate(state, {{"raw", [&] { return curl.exec(raw_true); }}, {"spawn", spawn_true}});
}

}  // namespace

void register_round_trip() {
  const int n = iterations_round_trip();
  benchmark::RegisterBenchmark("round_trip/run_true", BM_RunTrue)->Iterations(n)->UseRealTime();
  benchmark::RegisterBenchmark("round_trip/exec_vs_spawn", BM_ExecVsSpawn)
      ->Iterations(n)
      ->UseRealTime();
}

}  // namespace lizard::bench
