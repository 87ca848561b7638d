// MockServer: the HTTP front of the mock. It owns the state, the journal,
// the fault table and the route tables, and runs every /api request through
// the same steps: faults, the API key, the route's handler, the journal and
// the log line. /_mock requests need the control key and go to the control
// routes.
#include "lizard/mock/mock_server.h"

#include <httplib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "api/prefault.h"
#include "api_error.h"
#include "connections.h"
#include "faults.h"
#include "http_server.h"
#include "journal.h"
#include "router.h"
#include "routes.h"
#include "sandbox_runtime.h"
#include "state.h"
#include "state_dirs.h"

namespace lizard::mock {

using internal::ApiError;
using internal::Call;
using internal::error_body;

class MockServer::Impl {
 public:
  explicit Impl(const MockOptions& options)
      : state_(options),
        journal_(internal::JournalLimits{options.journal_max_entries, 1024 * 1024,
                                         options.journal_max_bytes}),
        control_key_(options.control_key.empty() ? state_.new_id("mck_", 32) : options.control_key),
        http_(http_limits(options)) {
    internal::add_account_routes(api_, state_);
    internal::add_sandbox_routes(api_, state_);
    internal::add_exec_routes(api_, state_);
    internal::add_file_routes(api_, state_);
    internal::add_volume_routes(api_, state_);
    internal::add_era_routes(api_, state_);
    internal::add_control_routes(control_, state_, journal_, faults_);
    setup_http();
    const MockOptions& opt = state_.options();
    port_ = opt.port == 0 ? http_.bind_to_any_port(opt.host)
                          : (http_.bind_to_port(opt.host, opt.port) ? opt.port : -1);
    if (port_ <= 0) {
      const int err = errno;
      throw std::runtime_error(
          "cannot listen on " + opt.host + ":" + std::to_string(opt.port) +
          (err == EADDRINUSE ? ": the port is in use" : std::string(": ") + std::strerror(err)));
    }
    internal::raise_listen_backlog(port_);
    listener_ = std::thread([this] { http_.listen_after_bind(); });
    // Ready means accepting: the socket is listening already, so wait only
    // for the loop to run.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!http_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  ~Impl() {
    state_.begin_stopping();
    state_.kill_all_sandboxes();
    http_.request_stop();
    http_.stop();
    if (listener_.joinable()) listener_.join();
  }

  std::string url() const {
    return "http://" + state_.options().host + ":" + std::to_string(port_);
  }
  int port() const { return port_; }
  const std::string& control_key() const { return control_key_; }
  internal::MockState& state() { return state_; }
  internal::Journal& journal() { return journal_; }
  internal::FaultTable& faults() { return faults_; }

 private:
  static internal::HttpLimits http_limits(const MockOptions& options) {
    internal::HttpLimits limits;
    limits.max_body_bytes = options.max_body_bytes;
    limits.body_timeout = options.request_body_timeout;
    return limits;
  }

  static void reply(httplib::Response& res, int status, const std::string& json) {
    res.status = status;
    res.set_content(json, "application/json");
  }

  static bool is_api(const std::string& path) { return path.rfind("/api/", 0) == 0; }

  static constexpr const char* kMissingKey = R"({"error":"Invalid or missing API key"})";
  static std::string control_key_refusal() {
    return error_body(
        {401, "Invalid or missing control key (X-Mock-Control-Key)", "CONTROL_KEY_REQUIRED", ""});
  }

  void setup_http() {
    http_.set_keep_alive_max_count(1000);
    // A request whose announced body is over the limit is refused before
    // anything is read; so is a multipart body (no route takes one).
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string length = req.get_header_value("Content-Length");
      const bool too_long =
          !length.empty() &&
          (length.find_first_not_of("0123456789") != std::string::npos || length.size() > 19 ||
           std::stoull(length) > state_.options().max_body_bytes);
      if (too_long) {
        refuse(req, res, 413, "Request body too large", "PAYLOAD_TOO_LARGE");
        return httplib::Server::HandlerResponse::Handled;
      }
      if (req.is_multipart_form_data()) {
        refuse(req, res, 415, "Multipart bodies are not accepted", "UNSUPPORTED_MEDIA_TYPE");
        return httplib::Server::HandlerResponse::Handled;
      }
      return refused_before_body(req, res) ? httplib::Server::HandlerResponse::Handled
                                           : httplib::Server::HandlerResponse::Unhandled;
    });
    const auto plain = [this](const httplib::Request& req, httplib::Response& res) {
      // httplib reads no body for GET or OPTIONS, and no such route reads
      // one: the route gets an empty one to parse, never a copy.
      std::string none;
      dispatch(req, res, none, req.body);
    };
    const auto with_body = [this](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
      // Read within the limit, chunked or not: the limit is enforced while
      // reading, never after buffering.
      std::string body;
      bool too_large = false;
      // The announced length (checked against the limit above) is reserved
      // once the first bytes come: no copy as the body grows, and a client
      // that announces much and sends nothing costs nothing.
      const std::string length = req.get_header_value("Content-Length");
      api::internal::PrefaultingAppender appender(body);  // its pages ahead of the data
      const bool ok = reader([&](const char* data, std::size_t n) {
        if (body.size() + n > state_.options().max_body_bytes) {
          too_large = true;
          return false;
        }
        if (body.empty() && !length.empty()) body.reserve(std::stoull(length));
        appender.append(data, n);
        return true;
      });
      if (too_large) return refuse(req, res, 413, "Request body too large", "PAYLOAD_TOO_LARGE");
      if (!ok) return refuse(req, res, 400, "The request body could not be read", "BAD_REQUEST");
      dispatch(req, res, body, body);
    };
    const std::string any = ".*";
    http_.Get(any, plain);
    http_.Options(any, plain);
    http_.Post(any, with_body);
    http_.Put(any, with_body);
    http_.Patch(any, with_body);
    http_.Delete(any, with_body);
    http_.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          const std::string msg = res.status == 413   ? "Request body too large"
                                  : res.status == 404 ? "Not found"
                                  : res.status == 400 ? "Bad request"
                                                      : "Request failed";
          const std::string code = res.status == 413   ? "PAYLOAD_TOO_LARGE"
                                   : res.status == 404 ? "NOT_FOUND"
                                                       : "BAD_REQUEST";
          res.set_content(error_body({res.status, msg, code, ""}), "application/json");
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          reply(res, 500, error_body({500, "Internal error in the mock", "INTERNAL", ""}));
        });
  }

  // Answers without reading the rest of the request, which then closes.
  void refuse(const httplib::Request& req, httplib::Response& res, int status,
              const std::string& message, const std::string& code) {
    refuse_unread(req, res, status, error_body({status, message, code, ""}));
  }
  void refuse_unread(const httplib::Request& req, httplib::Response& res, int status,
                     const std::string& json) {
    reply(res, status, json);
    res.set_header("Connection", "close");
    internal::current_connection().refuse_rest = true;
    if (is_api(req.path)) record(req, status, "");
  }

  static bool announces_body(const httplib::Request& req) {
    const std::string length = req.get_header_value("Content-Length");
    return length.find_first_not_of('0') != std::string::npos ||
           req.has_header("Transfer-Encoding");
  }

  // A request with a body whose answer cannot depend on it (no valid key,
  // no route, and no fault that would answer first) is answered as
  // dispatch() would, before the body is read: a client without a key
  // cannot make the mock read and keep up to max_body_bytes.
  bool refused_before_body(const httplib::Request& req, httplib::Response& res) {
    if (!announces_body(req)) return false;
    if (req.path.rfind("/_mock/", 0) == 0) {
      if (same_secret(internal::current_connection().control_key, control_key_)) return false;
      refuse_unread(req, res, 401, control_key_refusal());
      return true;
    }
    if (faults_.may_match(req.method, req.path)) return false;
    if (!is_api(req.path)) {
      refuse_unread(req, res, 404, error_body({404, "Not found", "NOT_FOUND", ""}));
      record(req, 404, "");
      return true;
    }
    if (state_.key_record(presented_key())) return false;
    refuse_unread(req, res, 401, kMissingKey);
    return true;
  }

  // `kept`: the body as the journal keeps it (Journal::keep), or nothing.
  void record(const httplib::Request& req, int status, std::string kept = {}) {
    JournalEntry e;
    e.method = req.method;
    e.path = req.path;
    const auto q = req.target.find('?');
    if (q != std::string::npos) e.query = req.target.substr(q + 1);
    e.status = status;
    e.accept = req.get_header_value("Accept");
    e.body = std::move(kept);
    journal_.record(std::move(e));
  }

  void log_line(const httplib::Request& req, int status,
                std::chrono::steady_clock::time_point t0) const {
    const auto& log = state_.options().log;
    if (!log) return;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // Never the headers: the keys live there.
    log(req.method + " " + req.path + " " + std::to_string(status) + " " + std::to_string(ms) +
        "ms");
  }

  // Routes one request through `router`; errors become the API's answers.
  static void route(const internal::Router& router, Call& c) {
    try {
      router.find(c.req.method, c.req.path, c.params)(c);
    } catch (const ApiError& e) {
      reply(c.res, e.status, error_body(e));
    } catch (const std::exception& e) {
      reply(c.res, 500, error_body({500, e.what(), "INTERNAL", ""}));
    }
  }

  // The caller's key exactly as sent: X-API-Key, else a Bearer token.
  static std::string presented_key() {
    const auto& conn = internal::current_connection();
    if (!conn.api_key.empty()) return conn.api_key;
    if (conn.authorization.rfind("Bearer ", 0) == 0) return conn.authorization.substr(7);
    return {};
  }

  static bool same_secret(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
  }

  // Answers one request. `kept` gets the journal's copy of `sent` (none for
  // a 401), taken before the route parses `body` in place.
  void handle_api(const httplib::Request& req, httplib::Response& res, std::string& body,
                  std::string_view sent, std::string& kept) {
    if (!is_api(req.path)) {
      kept = journal_.keep(sent);
      reply(res, 404, error_body({404, "Not found", "NOT_FOUND", ""}));
      return;
    }
    const auto key = state_.key_record(presented_key());
    if (!key) {
      reply(res, 401, kMissingKey);
      return;
    }
    kept = journal_.keep(sent);
    Call c{req, res, body, {}, *key};
    route(api_, c);
  }

  // `body` is the route's to parse in place; `sent` is the body as it came
  // (the same buffer, or not), of which the journal takes its copy first.
  void dispatch(const httplib::Request& req, httplib::Response& res, std::string& body,
                std::string_view sent) {
    const auto t0 = std::chrono::steady_clock::now();
    if (req.path.rfind("/_mock/", 0) == 0) {
      if (!same_secret(internal::current_connection().control_key, control_key_)) {
        reply(res, 401, control_key_refusal());
        return;
      }
      Call c{req, res, body, {}, {}};
      route(control_, c);
      return;
    }
    const std::optional<FaultRule> fault = faults_.match(req.method, req.path);
    if (fault) {
      switch (fault->action) {
        case FaultRule::Action::kRespond:
          res.status = fault->status;
          res.set_content(fault->body, fault->content_type);
          record(req, res.status, journal_.keep(sent));
          log_line(req, res.status, t0);
          return;
        case FaultRule::Action::kDelay:
          std::this_thread::sleep_for(fault->delay);
          break;
        case FaultRule::Action::kClose:
          record(req, 0, journal_.keep(sent));
          log_line(req, 0, t0);
          internal::drop_connection(req.local_port, req.remote_port);
          return;
        default:
          break;
      }
    }
    std::string kept;
    handle_api(req, res, body, sent, kept);
    if (fault && fault->action == FaultRule::Action::kCloseAfterHandling) {
      // The work happens (a streamed exec runs to its end), the answer is lost.
      internal::finish_streaming_silently(res);
      record(req, 0, std::move(kept));
      log_line(req, 0, t0);
      internal::drop_connection(req.local_port, req.remote_port);
      return;
    }
    if (fault && fault->action == FaultRule::Action::kTruncate) {
      internal::truncate_response(res, fault->truncate_at);
    }
    record(req, res.status, std::move(kept));
    log_line(req, res.status, t0);
  }

  // Declared first: destroyed last, after the server stopped using it.
  internal::MockState state_;
  internal::Journal journal_;
  internal::FaultTable faults_;
  internal::Router api_;
  internal::Router control_;
  std::string control_key_;
  internal::HttpServer http_;
  std::thread listener_;
  int port_ = -1;
};

std::optional<std::string> isolation_problem() { return internal::isolation_problem(); }

void remove_state_directories() { internal::remove_registered_state_dirs(); }

MockServer::MockServer(MockOptions options) : impl_(std::make_unique<Impl>(options)) {}
MockServer::~MockServer() = default;
std::string MockServer::url() const { return impl_->url(); }
int MockServer::port() const { return impl_->port(); }
std::string MockServer::api_key() const { return impl_->state().options().api_keys.front(); }
std::string MockServer::project_id() const { return impl_->state().first_project_id(); }
std::string MockServer::control_key() const { return impl_->control_key(); }
std::vector<JournalEntry> MockServer::requests() const { return impl_->journal().entries(); }
void MockServer::reset() {
  impl_->journal().clear();
  impl_->faults().clear();
  impl_->state().reset();
}
void MockServer::clear_journal() { impl_->journal().clear(); }
void MockServer::add_fault(FaultRule rule) { impl_->faults().add(rule); }
void MockServer::clear_faults() { impl_->faults().clear(); }
void MockServer::advance_clock(std::chrono::milliseconds by) {
  impl_->state().advance_clock(by.count());
}
std::size_t MockServer::live_sandboxes() const { return impl_->state().live_sandboxes(); }
std::size_t MockServer::live_processes() const { return impl_->state().live_processes(); }
std::string MockServer::workspace_dir(const std::string& sandbox_id) const {
  return impl_->state().workspace_dir(sandbox_id);
}

}  // namespace lizard::mock
