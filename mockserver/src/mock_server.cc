// MockServer: the HTTP front of the mock. It owns the state, the journal,
// the fault table and the route tables, and runs every /api request through
// the same steps: faults, the API key, the route's handler, the journal and
// the log line. /_mock requests go to the control routes.
#include "lizard/mock/mock_server.h"

#include <httplib.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "api_error.h"
#include "connections.h"
#include "faults.h"
#include "journal.h"
#include "router.h"
#include "routes.h"
#include "state.h"

namespace lizard::mock {

using internal::ApiError;
using internal::Call;
using internal::error_body;

class MockServer::Impl {
 public:
  explicit Impl(const MockOptions& options) : state_(options) {
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
      throw std::runtime_error("cannot bind " + opt.host + ":" + std::to_string(opt.port));
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
    http_.stop();
    if (listener_.joinable()) listener_.join();
  }

  std::string url() const {
    return "http://" + state_.options().host + ":" + std::to_string(port_);
  }
  int port() const { return port_; }
  internal::MockState& state() { return state_; }
  const internal::MockState& state() const { return state_; }
  internal::Journal& journal() { return journal_; }
  internal::FaultTable& faults() { return faults_; }

 private:
  static void reply(httplib::Response& res, int status, const std::string& json) {
    res.status = status;
    res.set_content(json, "application/json");
  }

  void setup_http() {
    const MockOptions& opt = state_.options();
    http_.new_task_queue = [] { return new httplib::ThreadPool(256); };
    http_.set_payload_max_length(opt.max_body_bytes);
    http_.set_keep_alive_max_count(1000);
    // httplib writes headers and body separately; without TCP_NODELAY, Nagle's
    // algorithm holds the body until the client's delayed ACK (~40 ms a request).
    http_.set_tcp_nodelay(true);
    http_.set_read_timeout(30, 0);
    http_.set_write_timeout(30, 0);
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      dispatch(req, res);
    };
    // httplib 0.11.4 answers an oversized body with 413 only after reading
    // (and discarding) all of it; a client announcing gigabytes would be read
    // whole. The announced length is known before the body: refuse it then.
    // httplib would next parse the unread body as a request line (buffered
    // without bound until a newline), so the connection is dropped a moment
    // after the answer went out (at once would reset it before the client
    // read the 413: the unread body makes close() send RST).
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.find_first_not_of("0123456789") != std::string::npos ||
          length.size() > 19 || std::stoull(length) <= state_.options().max_body_bytes) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      res.status = 413;
      res.set_header("Connection", "close");
      res.set_content(error_body({413, "Request body too large", "PAYLOAD_TOO_LARGE", ""}),
                      "application/json");
      if (req.path.rfind("/api/", 0) == 0) record(req, 413, false);
      std::thread([local = req.local_port, remote = req.remote_port] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        internal::drop_connection(local, remote);
      }).detach();
      return httplib::Server::HandlerResponse::Handled;
    });
    const std::string any = ".*";
    http_.Get(any, handler);
    http_.Post(any, handler);
    http_.Put(any, handler);
    http_.Delete(any, handler);
    http_.Patch(any, handler);
    http_.Options(any, handler);
    http_.set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string msg = res.status == 413   ? "Request body too large"
                            : res.status == 404 ? "Not found"
                            : res.status == 400 ? "Bad request"
                                                : "Request failed";
          std::string code = res.status == 413   ? "PAYLOAD_TOO_LARGE"
                             : res.status == 404 ? "NOT_FOUND"
                                                 : "BAD_REQUEST";
          res.set_content(error_body({res.status, msg, code, ""}), "application/json");
          if (res.status == 413 && req.path.rfind("/api/", 0) == 0) record(req, res.status, false);
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          reply(res, 500, error_body({500, "Internal error in the mock", "INTERNAL", ""}));
        });
  }

  void record(const httplib::Request& req, int status, bool with_body = true) {
    JournalEntry e;
    e.method = req.method;
    e.path = req.path;
    const auto q = req.target.find('?');
    if (q != std::string::npos) e.query = req.target.substr(q + 1);
    e.status = status;
    if (with_body) e.body = req.body;
    e.accept = req.get_header_value("Accept");
    journal_.record(std::move(e));
  }

  void log_line(const httplib::Request& req, int status,
                std::chrono::steady_clock::time_point t0) const {
    const auto& log = state_.options().log;
    if (!log) return;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // Never the headers: the key lives there.
    log(req.method + " " + req.path + " " + std::to_string(status) + " " + std::to_string(ms) +
        "ms");
  }

  // Routes one request through `router`; errors become the API's answers.
  void route(const internal::Router& router, Call& c) {
    try {
      router.find(c.req.method, c.req.path, c.params)(c);
    } catch (const ApiError& e) {
      reply(c.res, e.status, error_body(e));
    } catch (const std::exception& e) {
      reply(c.res, 500, error_body({500, e.what(), "INTERNAL", ""}));
    }
  }

  void handle_api(const httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/api/", 0) != 0) {
      reply(res, 404, error_body({404, "Not found", "NOT_FOUND", ""}));
      return;
    }
    std::string key = req.get_header_value("X-API-Key");
    if (key.empty()) {
      const std::string auth = req.get_header_value("Authorization");
      if (auth.rfind("Bearer ", 0) == 0) key = auth.substr(7);
    }
    const auto record = state_.key_record(key);
    if (!record) {
      reply(res, 401, R"({"error":"Invalid or missing API key"})");
      return;
    }
    Call c{req, res, req.body, {}, *record};
    route(api_, c);
  }

  void dispatch(const httplib::Request& req, httplib::Response& res) {
    const auto t0 = std::chrono::steady_clock::now();
    if (req.path.rfind("/_mock/", 0) == 0) {
      Call c{req, res, req.body, {}, {}};
      route(control_, c);
      return;
    }
    const std::optional<FaultRule> fault = faults_.match(req.method, req.path);
    if (fault) {
      switch (fault->action) {
        case FaultRule::Action::kRespond:
          res.status = fault->status;
          res.set_content(fault->body, fault->content_type);
          record(req, res.status);
          log_line(req, res.status, t0);
          return;
        case FaultRule::Action::kDelay:
          std::this_thread::sleep_for(fault->delay);
          break;
        case FaultRule::Action::kClose:
          record(req, 0);
          log_line(req, 0, t0);
          internal::drop_connection(req.local_port, req.remote_port);
          return;
        default:
          break;
      }
    }
    handle_api(req, res);
    if (fault && fault->action == FaultRule::Action::kCloseAfterHandling) {
      // The work happens (a streamed exec runs to its end), the answer is lost.
      internal::finish_streaming_silently(res);
      record(req, 0);
      log_line(req, 0, t0);
      internal::drop_connection(req.local_port, req.remote_port);
      return;
    }
    if (fault && fault->action == FaultRule::Action::kTruncate) {
      internal::truncate_response(res, fault->truncate_at);
    }
    record(req, res.status);
    log_line(req, res.status, t0);
  }

  // Declared first: destroyed last, after the server stopped using it.
  internal::MockState state_;
  internal::Journal journal_;
  internal::FaultTable faults_;
  internal::Router api_;
  internal::Router control_;
  httplib::Server http_;
  std::thread listener_;
  int port_ = -1;
};

MockServer::MockServer(MockOptions options) : impl_(std::make_unique<Impl>(options)) {}
MockServer::~MockServer() = default;
std::string MockServer::url() const { return impl_->url(); }
int MockServer::port() const { return impl_->port(); }
std::string MockServer::api_key() const { return impl_->state().options().api_keys.front(); }
std::string MockServer::project_id() const { return impl_->state().first_project_id(); }
bool MockServer::isolated() const { return impl_->state().isolated(); }
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
