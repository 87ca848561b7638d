// One adapter process and the JSON-RPC conversation with it (the runner's
// side). Internal to lizard_conformance_protocol; AdapterClient is the public
// face. connection.cc: the process (start, exit, stderr, faults, shutdown);
// conversation.cc: the messages (requests, answers, pings).
//
// Threads: a reader of the adapter's stdout (answers go to the call waiting
// for their id), a reader of its stderr (kept as lines), a waiter that reaps
// the process as soon as it exits (no zombie), and a monitor that pings the
// adapter while requests are in flight and declares it hung when it stops
// answering. Any call may come from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lines.h"
#include "lizard/conformance/adapter_client.h"
#include "wire.h"

namespace lizard::conformance::protocol {

class ProtocolSchemas;

// How long the client's threads wait in one poll before they look at the
// connection's state again.
inline constexpr std::chrono::milliseconds kPoll{200};
// How long the readers still take output once the adapter has exited and the
// session is stopping (Connection::past_drain).
inline constexpr std::chrono::milliseconds kDrainAfterExit{500};
// `text` on one line of at most `max` characters (then "..."), valid UTF-8:
// whitespace as spaces, every other control character as '?'.
std::string one_line(std::string_view text, std::size_t max);
// "2.5 s"
std::string seconds_text(std::chrono::milliseconds ms);

// One line from the adapter, parsed in place (the document points into it).
struct Message {
  Line line;
  rapidjson::Document doc;
};

// A successful answer; `result` points into `message`.
struct Reply {
  std::shared_ptr<const Message> message;
  const rapidjson::Value* result = nullptr;
};

class Connection {
 public:
  // Starts the adapter (options.argv) with options.env added to this
  // process's environment. Throws ProtocolError when it cannot be started.
  explicit Connection(AdapterOptions options);
  // shutdown().
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends a request whose params `write_params` writes (the members of the
  // params object) and waits for its answer: at most `deadline` when given
  // (then the adapter is declared hung), else until it comes or the
  // connection breaks. A stop requested on `stop` sends $/cancelRequest.
  // Throws the contract's exception for an error answer, ProtocolError for
  // everything that is not the protocol.
  Reply call(std::string_view method, const std::function<void(Writer&)>& write_params,
             std::stop_token stop = {},
             std::optional<std::chrono::milliseconds> deadline = std::nullopt);

  // Records a protocol fault (the first one is kept, with the stderr tail)
  // and returns the message a ProtocolError should carry. With `fatal`, the
  // adapter is killed and every call in flight fails with it.
  std::string fault(const std::string& what, bool fatal);
  std::string first_fault() const;

  std::vector<std::string> stderr_lines() const;
  // AdapterClient::watch_stderr_for and stderr_carried_a_secret.
  void watch_stderr_for(const std::vector<std::string>& secrets);
  bool stderr_carried_a_secret() const;
  // "; its last stderr lines: a | b | c", or "; it wrote nothing to stderr".
  std::string stderr_tail() const;
  // "the adapter `python3 adapter.py`" for messages.
  const std::string& description() const { return description_; }
  const AdapterOptions& options() const { return options_; }

  void shutdown();
  void kill_now();
  // initialize was answered: from now on answer_deadline, not
  // start_deadline, tells a hung adapter.
  void mark_started() { started_ = true; }
  // The deadline in force: start_deadline (or answer_deadline if longer)
  // until mark_started(), answer_deadline after.
  std::chrono::milliseconds deadline() const {
    return started_ ? options_.answer_deadline
                    : std::max(options_.answer_deadline, options_.start_deadline);
  }

 private:
  struct Pending {
    std::string method;
    bool internal = false;  // a $/ping of the monitor
    bool done = false;
    std::shared_ptr<const Message> answer;
    std::string failure;  // set instead of `answer` when the connection broke
    std::chrono::steady_clock::time_point sent;
  };

  void spawn();
  void read_stdout();
  void read_stderr();
  void wait_for_exit();
  void monitor();
  void handle_line(Line line);
  void deliver(std::uint64_t id, std::shared_ptr<const Message> message);
  // Writes one line, which ends with its newline. Throws ProtocolError;
  // also when !may_wait and another line is being written.
  void write_line(std::string_view line, bool may_wait = true);
  std::uint64_t send_request(std::string_view method,
                             const std::function<void(Writer&)>& write_params,
                             const std::shared_ptr<Pending>& pending);
  void send_cancel(std::uint64_t id);
  void fail_all(const std::string& why);
  std::string exit_description();
  void signal_group(int sig);

  AdapterOptions options_;
  std::string description_;
  const ProtocolSchemas* schemas_ = nullptr;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;

  mutable std::mutex mutex_;  // pending_, fault_, broken_, exit status
  std::condition_variable cv_;
  std::map<std::uint64_t, std::shared_ptr<Pending>> pending_;
  std::uint64_t next_id_ = 1;
  std::string fault_;
  bool broken_ = false;
  bool exited_ = false;
  int exit_status_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> started_{false};
  bool shut_down_ = false;

  std::mutex write_mutex_;
  std::atomic<bool> writing_{false};
  std::atomic<std::chrono::steady_clock::rep> write_started_{0};  // the line being written
  std::atomic<std::uint64_t> written_bytes_{0};                   // to the adapter's stdin, in all
  // When the last bytes of a line not yet complete arrived (0: none pending).
  std::atomic<std::chrono::steady_clock::rep> line_progress_{0};

  mutable std::mutex stderr_mutex_;
  std::condition_variable stderr_cv_;
  bool stderr_eof_ = false;
  std::deque<std::string> stderr_lines_;
  std::size_t stderr_bytes_ = 0;
  std::deque<std::string> stderr_tail_;
  // The watched strings, the stream's last bytes (a string cut between two
  // reads is still found), and whether one was seen. Under stderr_mutex_.
  std::vector<std::string> stderr_secrets_;
  std::string secret_carry_;
  bool secret_seen_ = false;
  void scan_for_secrets(std::string_view bytes);
  bool past_drain(std::optional<std::chrono::steady_clock::time_point>& drain_until, bool quiet);

  std::thread stdout_reader_;
  std::thread stderr_reader_;
  std::thread waiter_;
  std::thread monitor_;
  std::mutex shutdown_mutex_;
  std::mutex fatal_mutex_;  // one fatal fault at a time
};

}  // namespace lizard::conformance::protocol
