// The backend protocol's wire format (values, errno names, the error table)
// and its JSON Schemas. Part of protocol_test (ctest protocol.unit).
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "connection.h"
#include "lizard/workspace/errors.h"
#include "schemas.h"
#include "wire.h"

namespace lizard::conformance {
namespace {

using protocol::ProtocolSchemas;

// ---------------------------------------------------------------------------
// The wire format.

// An adapter's name, profile, stderr and messages reach the console and the
// reports through one_line: its escape sequences (retitle the terminal,
// clear the screen, overwrite a line of a CI log) must not.
TEST(Wire, OneLineKeepsNoControlCharacter) {
  using namespace std::string_view_literals;
  EXPECT_EQ(protocol::one_line("x\x1b]0;pwned\x07\x1b[2J\x00\x7f y\n\tz\r\v"sv, 200),
            std::string("x?]0;pwned??[2J?? y  z  "));
  EXPECT_EQ(protocol::one_line("caf\xc3\xa9", 200), "caf\xc3\xa9");
  EXPECT_EQ(protocol::one_line("abcdef", 3), "abc...");
}

TEST(Wire, Base64RoundTripsEveryByteAndLength) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (std::size_t n = 0; n <= all.size(); n += (n < 8 ? 1 : 37)) {
    const std::string bytes = all.substr(0, n);
    const std::string text = protocol::base64_encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    EXPECT_EQ(protocol::base64_decode(text), bytes) << n;
  }
  EXPECT_EQ(protocol::base64_encode("foob"), "Zm9vYg==");
  EXPECT_FALSE(protocol::base64_decode("Zm9vYg="));     // not a multiple of 4
  EXPECT_FALSE(protocol::base64_decode("Zm9v\nYg=="));  // a newline
  EXPECT_FALSE(protocol::base64_decode("Zm=vYg=="));    // padding inside
}

std::string written(const std::function<void(protocol::Writer&)>& write) {
  rapidjson::StringBuffer buffer;
  protocol::Writer w(buffer);
  write(w);
  return buffer.GetString();
}

TEST(Wire, TextIsAStringWhenUtf8AndBase64Otherwise) {
  EXPECT_EQ(written([](auto& w) { protocol::write_text(w, "caf\xC3\xA9"); }), "\"caf\xC3\xA9\"");
  const std::string bad =
      "a\xFF"
      "b";
  const std::string json = written([&](auto& w) { protocol::write_text(w, bad); });
  EXPECT_EQ(json, "{\"b64\":\"Yf9i\"}");
  rapidjson::Document d;
  d.Parse(json.c_str());
  EXPECT_EQ(protocol::read_text(d), bad);
  d.Parse("{\"b64\":\"Yf9i\",\"extra\":1}");
  EXPECT_FALSE(protocol::read_text(d));
}

TEST(Wire, SecondsCarryNanAndTheInfinities) {
  for (double v : {1.5, -1.0, std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    rapidjson::Document d;
    d.Parse(written([&](auto& w) { protocol::write_seconds(w, v); }).c_str());
    EXPECT_EQ(protocol::read_seconds(d), v);
  }
  rapidjson::Document d;
  d.Parse(written([](auto& w) {
            protocol::write_seconds(w, std::numeric_limits<double>::quiet_NaN());
          }).c_str());
  ASSERT_TRUE(protocol::read_seconds(d));
  EXPECT_TRUE(std::isnan(*protocol::read_seconds(d)));
}

TEST(Wire, ErrnoNamesRoundTrip) {
  for (std::errc e : {std::errc::no_such_file_or_directory, std::errc::is_a_directory,
                      std::errc::not_a_directory, std::errc::permission_denied,
                      std::errc::file_exists, std::errc::too_many_symbolic_link_levels}) {
    const std::string name = protocol::errno_name(std::make_error_code(e));
    ASSERT_FALSE(name.empty());
    EXPECT_EQ(protocol::errc_from_name(name), e) << name;
  }
  EXPECT_EQ(protocol::errno_name(std::make_error_code(std::errc::no_such_file_or_directory)),
            "ENOENT");
  EXPECT_FALSE(protocol::errc_from_name("ENOTANERRNO"));
}

// Writes the error object of `thrown` and throws what it decodes to.
template <typename E>
void round_trip(const E& thrown) {
  const std::string json = written([&](auto& w) {
    try {
      throw thrown;
    } catch (...) {
      protocol::write_current_exception(w);
    }
  });
  rapidjson::Document d;
  d.Parse(json.c_str());
  ASSERT_FALSE(d.HasParseError()) << json;
  EXPECT_EQ(ProtocolSchemas::get().check("", "error", d), "") << json;
  const std::string problem = protocol::throw_error_object(d);
  FAIL() << "did not throw: " << problem;
}

TEST(Wire, EveryErrorKindRoundTrips) {
  using namespace workspace;
  try {
    round_trip(WorkspaceTimeoutError("late", "out\xFF", "err", Seconds(2.5)));
  } catch (const WorkspaceTimeoutError& e) {
    EXPECT_STREQ(e.what(), "late");
    EXPECT_EQ(e.out(), "out\xFF");
    EXPECT_EQ(e.err(), "err");
    EXPECT_EQ(e.timeout().count(), 2.5);
  }
  try {
    round_trip(WorkspaceOutputLimitError("big", kOutputLimitBytes, "o", "e"));
  } catch (const WorkspaceOutputLimitError& e) {
    EXPECT_EQ(e.limit(), kOutputLimitBytes);
    EXPECT_EQ(e.out_head(), "o");
    EXPECT_EQ(e.err_head(), "e");
  }
  try {
    round_trip(WorkspaceTransientError("flaky", true, 503, std::chrono::seconds(2)));
  } catch (const WorkspaceTransientError& e) {
    EXPECT_TRUE(e.may_have_been_admitted());
    EXPECT_EQ(e.http_status(), 503);
    EXPECT_EQ(e.retry_after(), std::chrono::seconds(2));
  }
  try {
    round_trip(make_path_error("read", "/w/missing", std::errc::no_such_file_or_directory));
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::no_such_file_or_directory));
    EXPECT_EQ(e.path1().string(), "/w/missing");
  }
  EXPECT_THROW(round_trip(WorkspaceAuthenticationError("key")), WorkspaceAuthenticationError);
  EXPECT_THROW(round_trip(WorkspaceUnavailableError("gone")), WorkspaceUnavailableError);
  EXPECT_THROW(round_trip(WorkspaceReadOnlyError("ro")), WorkspaceReadOnlyError);
  EXPECT_THROW(round_trip(WorkspaceCancelledError("stop")), WorkspaceCancelledError);
  EXPECT_THROW(round_trip(WorkspaceNotSupportedError("501")), WorkspaceNotSupportedError);
  EXPECT_THROW(round_trip(std::invalid_argument("bad")), std::invalid_argument);
  try {
    round_trip(WorkspaceError("plain"));
  } catch (const WorkspaceUnavailableError&) {
    ADD_FAILURE() << "a plain WorkspaceError became a subtype";
  } catch (const WorkspaceError& e) {
    EXPECT_STREQ(e.what(), "plain");
  }
  try {
    round_trip(std::runtime_error("other"));
  } catch (const WorkspaceError&) {
    ADD_FAILURE() << "another exception became a WorkspaceError";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "other");
  }
}

TEST(Wire, UnknownErrorsAreReportedNotThrown) {
  rapidjson::Document d;
  d.Parse(R"({"code":-32601,"message":"no such method"})");
  EXPECT_NE(protocol::throw_error_object(d).find("-32601"), std::string::npos);
  d.Parse(R"({"code":-32000,"message":"m","data":{"kind":"weird"}})");
  EXPECT_NE(protocol::throw_error_object(d).find("weird"), std::string::npos);
  d.Parse(R"({"code":-32000,"message":"m","data":{"kind":"path","errno":"EWHAT"}})");
  EXPECT_NE(protocol::throw_error_object(d).find("EWHAT"), std::string::npos);
}

// ---------------------------------------------------------------------------
// The schemas.

TEST(Schemas, EveryMessageSchemaCompilesAndRejectsANumber) {
  const auto& schemas = ProtocolSchemas::get();
  rapidjson::Document number;
  number.Parse("42");
  for (const auto& method : ProtocolSchemas::methods()) {
    EXPECT_NE(schemas.check(method, "params", number), "") << method << " params took 42";
    if (method != "$/cancelRequest" && method != "$/ping" && method != "backend/destroy" &&
        method != "backend/drop" && method != "environment/destroy" && method != "fs/write" &&
        method != "fs/make_dir" && method != "fs/remove") {
      EXPECT_NE(schemas.check(method, "result", number), "") << method << " result took 42";
    }
  }
  for (const char* part : {"request", "notification", "response", "error"}) {
    EXPECT_NE(schemas.check("", part, number), "") << part << " took 42";
  }
}

TEST(Schemas, TellGoodMessagesFromBad) {
  const auto& schemas = ProtocolSchemas::get();
  auto check_request = [&](const char* json) {
    rapidjson::Document d;
    d.Parse(json);
    return schemas.check_request(d);
  };
  auto check_response = [&](const char* method, const char* json) {
    rapidjson::Document d;
    d.Parse(json);
    return schemas.check_response(method, d);
  };
  EXPECT_EQ(check_request(R"({"jsonrpc":"2.0","id":3,"method":"run","params":{"backend":1,)"
                          R"("command":{"argv":["ls",{"b64":"/w=="}]},"timeout":"NaN",)"
                          R"("output_limit":10485760}})"),
            "");
  EXPECT_NE(check_request(R"({"jsonrpc":"2.0","id":3,"method":"run","params":{"backend":1,)"
                          R"("command":{"argv":["ls"],"shell":"ls"},"output_limit":1}})"),
            "");
  EXPECT_NE(check_request(R"({"jsonrpc":"2.0","id":3,"method":"nope","params":{}})"), "");
  EXPECT_EQ(check_response("fs/stat", R"({"jsonrpc":"2.0","id":9,"result":)"
                                      R"({"name":"a","path":"/w/a","is_dir":false,"size":3}})"),
            "");
  EXPECT_NE(check_response("fs/stat", R"({"jsonrpc":"2.0","id":9,"result":)"
                                      R"({"name":"a","path":"/w/a","is_directory":false}})"),
            "");
  EXPECT_EQ(check_response("fs/read", R"({"jsonrpc":"2.0","id":9,"error":{"code":-32000,)"
                                      R"("message":"m","data":{"kind":"path","errno":"ENOENT",)"
                                      R"("path":"/w/x"}}})"),
            "");
  EXPECT_NE(check_response("fs/read", R"({"jsonrpc":"2.0","id":9,"error":{"code":-32000,)"
                                      R"("message":"m","data":{"kind":"timeout"}}})"),
            "");
  EXPECT_NE(check_response("run", R"({"jsonrpc":"2.0","id":9,"result":{"exit_code":0}})"), "");
}

// "pattern" (an errno's name) is checked, by many threads at once: the
// regex's match state must not be shared (under ThreadSanitizer,
// RapidJSON's own regex was a data race; see schemas.cc).
TEST(Schemas, ErrnoPatternsAreCheckedFromManyThreadsAtOnce) {
  const auto& schemas = ProtocolSchemas::get();
  const auto error_with = [](const char* name) {
    return std::string(R"({"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"m",)") +
           R"("data":{"kind":"path","errno":")" + name + R"(","path":"/w/x"}}})";
  };
  const std::string good = error_with("ENOENT");
  const std::string bad = error_with("enoent");
  const auto check = [&](const std::string& json) {
    rapidjson::Document d;
    d.Parse(json.c_str());
    return schemas.check_response("fs/read", d);
  };
  ASSERT_EQ(check(good), "");
  ASSERT_NE(check(bad), "");
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const bool even = i % 2 == 0;
        if (check(even ? good : bad).empty() != even) ++wrong;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace lizard::conformance
