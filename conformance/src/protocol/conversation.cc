// The conversation with the adapter (connection.h): requests out, answers
// in and matched to their calls, pings while requests are in flight. A line
// is read into one buffer and parsed where it lies (lines.h); a request is
// written from the buffer it was built in.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "connection.h"
#include "cpu_wait.h"
#include "schemas.h"

namespace lizard::conformance::protocol {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Connection::read_stdout() {
  LineReader reader(stdout_fd_);
  std::optional<Clock::time_point> drain_until;
  while (true) {
    pollfd p{stdout_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(kPoll.count()));
    if (r < 0 && errno == EINTR) continue;
    if (past_drain(drain_until, r == 0)) return;
    if (r == 0) continue;
    const ssize_t n = reader.fill();
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    while (auto line = reader.next()) handle_line(std::move(*line));
    // An adapter in the middle of a line cannot answer a $/ping before the
    // line ends: the bytes arriving are its sign of life (monitor()).
    line_progress_ = reader.partial_size() > 0 ? Clock::now().time_since_epoch().count() : 0;
    if (reader.partial_size() > options_.max_line_bytes) {
      fault("wrote a line longer than " + std::to_string(options_.max_line_bytes) +
                " bytes (the protocol's limit; it begins: " +
                one_line(reader.partial_begin(80), 80) + ")",
            true);
      return;
    }
  }
  if (stopping_) return;
  std::size_t in_flight = 0;
  std::string methods;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, p] : pending_) {
      if (p->internal) continue;
      ++in_flight;
      if (in_flight <= 3) methods += (methods.empty() ? "" : ", ") + p->method;
    }
  }
  fault(exit_description() + (in_flight ? " with " + std::to_string(in_flight) +
                                              " request(s) in flight (" + methods + ")"
                                        : " in the middle of the session"),
        true);
}

void Connection::monitor() {
  const auto interval = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(250),
                                                            options_.answer_deadline / 4);
  auto last_ping = Clock::now();
  // The adapter's signs of life besides answers: the bytes of its input it
  // has taken (written by us minus still in the pipe), and when that last grew;
  // when its output or its stderr last had bytes in the pipe that this
  // process had not read yet (the reader held up by a long line's copy, a
  // flood of stderr lines or a starved host).
  std::int64_t taken = 0;
  Clock::time_point took_input{};
  Clock::time_point input_drained{};
  Clock::time_point output_unread{};
  CpuWait cpu_wait(pid_);
  Clock::duration waited{};
  Clock::time_point last_wait_read{};
  Silence ping_silence;
  Silence input_silence;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_ && !broken_) {
    cv_.wait_for(lock, kPoll);
    if (stopping_ || broken_) return;  // stdin_fd_ is open until then
    // An adapter that exited is not hung: the waiter reports its exit, once
    // the readers had a moment to take what it wrote last.
    if (exited_) continue;
    const auto now = Clock::now();
    // Every answer wakes this loop: /proc is read at most every kPoll / 2,
    // without the lock the readers take for every answer (a read skipped
    // loses no wait, the next one adds it).
    if (now - last_wait_read >= kPoll / 2) {
      last_wait_read = now;
      lock.unlock();
      waited = cpu_wait.read(now);
      lock.lock();
      if (stopping_ || broken_) return;
      if (exited_) continue;
    }
    // The count first: a write between the two then only makes `taken` smaller.
    const auto written = static_cast<std::int64_t>(written_bytes_.load());
    int queued = 0;
    const bool measured = ::ioctl(stdin_fd_, FIONREAD, &queued) == 0;
    if (measured && written - queued > taken) {
      taken = written - queued;
      took_input = now;
    }
    // Nothing written waits in the pipe: the adapter is not behind on its
    // input, whatever holds up the line's writer (a starved host).
    if (measured && queued == 0) input_drained = now;
    int unread = 0;
    if (::ioctl(stdout_fd_, FIONREAD, &unread) == 0 && unread > 0) output_unread = now;
    // The same for its stderr: an adapter blocked on a full stderr pipe
    // waits for this process's reader (24 million empty lines, each kept,
    // took more than 5 s to read on a loaded host), not the other way round.
    unread = 0;
    if (::ioctl(stderr_fd_, FIONREAD, &unread) == 0 && unread > 0) output_unread = now;
    bool waiting = false;
    std::optional<Clock::time_point> ping_sent;
    std::size_t in_flight = 0;
    for (const auto& [id, p] : pending_) {
      if (p->internal) {
        ping_sent = p->sent;
      } else {
        ++in_flight;
        waiting = waiting || now - p->sent >= interval;
      }
    }
    const auto limit = deadline();
    // An adapter in the middle of its input or of a line of its own cannot
    // answer a ping before it gets there: bytes moving either way are life,
    // and so are bytes it wrote that wait for this process to read them.
    const auto wrote_output = Clock::time_point(Clock::duration(line_progress_.load()));
    const auto line_started = Clock::time_point(Clock::duration(write_started_.load()));
    // A line it has taken nothing of since it started: the check after this
    // one says so once the line has waited `limit`, which is the more exact
    // account of the same hang (a ping sent before the line, unanswered,
    // would otherwise be reported first, as it was on a loaded host).
    const bool line_untaken = writing_ && took_input < line_started;
    if (ping_sent && !line_untaken &&
        ping_silence.length(std::max({*ping_sent, wrote_output, took_input, output_unread}), now,
                            waited, limit) > limit) {
      lock.unlock();
      fault("answered no $/ping for " + seconds_text(limit) + " while " +
                std::to_string(in_flight) + " request(s) were in flight (hung)" +
                ping_silence.waited_text(),
            true);
      return;
    }
    if (writing_ && input_silence.length(std::max({line_started, took_input, input_drained}), now,
                                         waited, limit) > limit) {
      lock.unlock();
      fault("read none of its input for " + seconds_text(limit) + " (hung)" +
                input_silence.waited_text(),
            true);
      return;
    }
    if (waiting && !ping_sent && now - last_ping >= interval) {
      last_ping = now;
      auto ping = std::make_shared<Pending>();
      ping->method = "$/ping";
      ping->internal = true;
      lock.unlock();
      try {
        send_request("$/ping", {}, ping);
      } catch (...) {
        // A line was being written (a later pass tries again) or the
        // connection broke; the checks above see either.
      }
      lock.lock();
    }
  }
}

void Connection::handle_line(Line line) {
  const std::string_view text = line.view();
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) return;
  if (options_.tap) options_.tap(false, text);
  const std::string excerpt = one_line(text.substr(0, 120), 120);
  auto message = std::make_shared<Message>();
  message->line = std::move(line);
  // Validating the encoding of every string would put the long base64
  // strings on RapidJSON's slow path; Text values are checked where they are
  // read, and --check-protocol checks the whole line.
  const rapidjson::ParseResult parsed =
      parse_line(message->doc, message->line, schemas_ != nullptr);
  const rapidjson::Document& d = message->doc;
  if (parsed.IsError()) {
    fault("wrote a line that is not JSON (" + parse_error_text(parsed) + "): " + excerpt, true);
    return;
  }
  const rapidjson::Value* version = member(d, "jsonrpc");
  if (!d.IsObject() || version == nullptr || !version->IsString() ||
      std::string_view(version->GetString()) != "2.0") {
    fault("wrote a line that is not a JSON-RPC 2.0 message: " + excerpt, true);
    return;
  }
  if (member(d, "method") != nullptr) {
    fault("sent a request or notification (\"method\"); an adapter only answers: " + excerpt, true);
    return;
  }
  const rapidjson::Value* id = member(d, "id");
  const rapidjson::Value* error = member(d, "error");
  if (id == nullptr || id->IsNull()) {
    std::string why;
    if (const rapidjson::Value* m = error ? member(*error, "message") : nullptr;
        m && m->IsString()) {
      why = m->GetString();
    }
    fault("answered without an id (it could not read a request" +
              (why.empty() ? std::string() : ": " + one_line(why, 200)) + "): " + excerpt,
          true);
    return;
  }
  const bool has_result = member(d, "result") != nullptr;
  if (!id->IsUint64() || has_result == (error != nullptr)) {
    fault(
        "wrote an answer that is not a JSON-RPC response (an integer id and exactly one of "
        "result and error): " +
            excerpt,
        true);
    return;
  }
  const std::uint64_t number = id->GetUint64();
  std::string method;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(number);
    if (it != pending_.end()) method = it->second->method;
  }
  if (method.empty()) {
    fault("answered id " + std::to_string(number) + ", which no request in flight has: " + excerpt,
          true);
    return;
  }
  if (schemas_ != nullptr) {
    if (std::string why = schemas_->check_response(method, d); !why.empty()) {
      fault("answered " + method + " with a message that does not match the protocol's schema (" +
                why + "): " + excerpt,
            true);
      return;
    }
  }
  deliver(number, std::move(message));
}

void Connection::deliver(std::uint64_t id, std::shared_ptr<const Message> message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    it->second->answer = std::move(message);
    it->second->done = true;
    pending_.erase(it);
  }
  cv_.notify_all();
}

void Connection::write_line(std::string_view line, bool may_wait) {
  std::unique_lock<std::mutex> lock(write_mutex_, std::defer_lock);
  if (may_wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    throw ProtocolError(description_ + ": a line is being written");
  }
  write_started_ = Clock::now().time_since_epoch().count();
  writing_ = true;
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = false; }
  } done{writing_};
  if (options_.tap) options_.tap(true, line.substr(0, line.size() - 1));  // without its '\n'
  // A write to an adapter that died raises SIGPIPE in this thread: keep it
  // blocked here and take it, so the runner gets EPIPE instead of dying.
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  struct Restore {
    sigset_t& set;
    sigset_t& old;
    ~Restore() {
      timespec zero{};
      while (sigtimedwait(&set, nullptr, &zero) > 0) {
      }
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
  } restore{pipe_set, old};
  std::string_view rest(line);
  while (!rest.empty()) {
    if (stopping_ || stdin_fd_ < 0) throw ProtocolError(description_ + ": the session ended");
    {
      std::lock_guard<std::mutex> state(mutex_);
      if (broken_) throw ProtocolError(fault_);
    }
    pollfd p{stdin_fd_, POLLOUT, 0};
    const int r = ::poll(&p, 1, static_cast<int>(kPoll.count()));
    if (r <= 0) continue;
    const ssize_t n = ::write(stdin_fd_, rest.data(), rest.size());
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
      written_bytes_ += static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    // EPIPE: it stopped reading, almost always because it exited; the
    // readers say how, give them a moment.
    std::unique_lock<std::mutex> state(mutex_);
    cv_.wait_for(state, std::chrono::seconds(3), [&] { return broken_; });
    throw ProtocolError(broken_ ? fault_ : description_ + " closed its stdin");
  }
}

std::uint64_t Connection::send_request(std::string_view method,
                                       const std::function<void(Writer&)>& write_params,
                                       const std::shared_ptr<Pending>& pending) {
  std::uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_)
      throw ProtocolError(fault_.empty() ? description_ + ": the session ended" : fault_);
    if (stopping_) throw ProtocolError(description_ + ": the session ended");
    id = next_id_++;
    pending->sent = Clock::now();
    pending_[id] = pending;
  }
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("jsonrpc");
  w.String("2.0");
  w.Key("id");
  w.Uint64(id);
  w.Key("method");
  w.String(method.data(), static_cast<rapidjson::SizeType>(method.size()));
  w.Key("params");
  w.StartObject();
  if (write_params) write_params(w);
  w.EndObject();
  w.EndObject();
  buffer.Put('\n');
  const std::string_view line(buffer.GetString(), buffer.GetSize());
  const std::string_view message = line.substr(0, line.size() - 1);
  auto forget = [&] {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(id);
  };
  if (schemas_ != nullptr) {
    rapidjson::Document d;
    d.Parse(message.data(), message.size());
    if (std::string why = schemas_->check_request(d); !why.empty()) {
      forget();
      throw std::logic_error("the runner's own " + std::string(method) +
                             " request does not match the protocol's schema: " + why);
    }
  }
  try {
    // The monitor's ping never waits behind a line being written: it could
    // not overtake it, and the monitor must stay free to see the writer stuck.
    write_line(line, !pending->internal);
  } catch (...) {
    forget();
    throw;
  }
  return id;
}

void Connection::send_cancel(std::uint64_t id) {
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  w.StartObject();
  w.Key("jsonrpc");
  w.String("2.0");
  w.Key("method");
  w.String("$/cancelRequest");
  w.Key("params");
  w.StartObject();
  w.Key("id");
  w.Uint64(id);
  w.EndObject();
  w.EndObject();
  buffer.Put('\n');
  const std::string_view line(buffer.GetString(), buffer.GetSize());
  try {
    write_line(line);
  } catch (...) {
    // The call itself fails with the reason.
  }
}

Reply Connection::call(std::string_view method, const std::function<void(Writer&)>& write_params,
                       std::stop_token stop, std::optional<std::chrono::milliseconds> deadline) {
  auto pending = std::make_shared<Pending>();
  pending->method = std::string(method);
  const std::uint64_t id = send_request(method, write_params, pending);
  bool answered = true;
  {
    std::optional<std::stop_callback<std::function<void()>>> cancel;
    if (stop.stop_possible()) {
      cancel.emplace(stop, std::function<void()>([this, id] { send_cancel(id); }));
    }
    std::unique_lock<std::mutex> lock(mutex_);
    auto done = [&] { return pending->done; };
    if (deadline) {
      answered = cv_.wait_for(lock, *deadline, done);
    } else {
      cv_.wait(lock, done);
    }
  }
  if (!answered) {
    throw ProtocolError(fault(
        "did not answer " + std::string(method) + " within " + seconds_text(*deadline) + " (hung)",
        true));
  }
  if (!pending->failure.empty()) throw ProtocolError(pending->failure);
  const rapidjson::Value& d = pending->answer->doc;
  if (const rapidjson::Value* error = member(d, "error")) {
    const std::string why = throw_error_object(*error);
    throw ProtocolError(fault("answered " + std::string(method) + " with " + why, false));
  }
  return Reply{pending->answer, member(d, "result")};
}

}  // namespace lizard::conformance::protocol
