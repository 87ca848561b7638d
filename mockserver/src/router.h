// One declarative table of the API's routes: method, path pattern, handler.
// A pattern is a '/'-separated list of literal segments, `{name}` (any one
// segment, handed to the handler in order) and a final `**` (the rest, zero
// or more segments). Empty segments are ignored ("//" is "/").
//
// Thread safety: build the table first; find() may then run on any thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "entities.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace lizard::mock::internal {

// One request as a handler sees it.
struct Call {
  const httplib::Request& req;
  httplib::Response& res;
  // The request body, read within the body limit; a RequestBody parses it
  // in place (the journal has its copy already).
  std::string& body;
  std::vector<std::string> params;  // the {name} segments of the pattern, in order
  ApiKey key;                       // the caller's key (control routes: none)

  const std::string& param(std::size_t i) const { return params.at(i); }
  // The query parameter, or nullptr when absent.
  const std::string* query(const char* name) const;
  void reply(int status, const std::string& json) const;
};

using Handler = std::function<void(Call&)>;

class Router {
 public:
  // `method` "*" matches any method. Earlier routes win.
  void add(std::string method, std::string_view pattern, Handler handler);
  // The handler for method and path, with the {name} segments in `params`.
  // No pattern matches: 404 NOT_FOUND; a pattern matches with another
  // method: 405 METHOD_NOT_ALLOWED (both thrown as ApiError).
  const Handler& find(const std::string& method, const std::string& path,
                      std::vector<std::string>& params) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

std::vector<std::string> split_path(std::string_view path);

}  // namespace lizard::mock::internal
