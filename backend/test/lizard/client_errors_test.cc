// lizard::api's one error mapping, case by case and without a socket: the
// table itself (throw_transport_error), every row again through a Client on
// a scripted transport, the error body rules, redaction, and which
// TransportFailure each curl code is.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include "api/curl_transport.h"
#include "lizard/api/client.h"
#include "lizard/api/errors.h"
#include "scripted_transport.h"

namespace lizard::api {
namespace {

using namespace std::chrono_literals;
using scripted::ScriptedTransport;
using workspace::WorkspaceAuthenticationError;
using workspace::WorkspaceCancelledError;
using workspace::WorkspaceError;
using workspace::WorkspaceNotSupportedError;
using workspace::WorkspaceTransientError;

using scripted::kSecret;

TransportOutcome http(long status, std::string body,
                      std::map<std::string, std::string> headers = {}) {
  TransportOutcome o;
  o.status = status;
  o.body = std::move(body);
  o.headers = std::move(headers);
  o.request_sent = true;
  return o;
}

TransportOutcome failed(TransportFailure failure, bool sent) {
  TransportOutcome o;
  o.failure = failure;
  o.request_sent = sent;
  o.detail = "scripted";
  return o;
}

template <typename E>
E catch_as(const TransportOutcome& outcome) {
  try {
    throw_transport_error(outcome, "POST /api/x", kSecret);
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong type: " << e.what();
  }
  throw std::logic_error("unreachable");
}

TEST(ErrorTableTest, AuthenticationFor401And403) {
  for (long status : {401L, 403L}) {
    const auto e = catch_as<WorkspaceAuthenticationError>(
        http(status, R"({"error":"Invalid or missing API key"})"));
    EXPECT_NE(std::string(e.what()).find("Invalid or missing API key"), std::string::npos);
  }
  const auto scoped = catch_as<WorkspaceAuthenticationError>(
      http(403, R"({"error":"ACCOUNT_SCOPE_REQUIRED","message":"Needs an account key"})"));
  EXPECT_NE(std::string(scoped.what()).find("Needs an account key"), std::string::npos);
}

TEST(ErrorTableTest, PaymentNotFoundConflictCarryCodeAndMessage) {
  const auto paid = catch_as<PaymentRequiredError>(http(402, R"({"error":"Payment required"})"));
  EXPECT_EQ(paid.status(), 402);
  const auto missing = catch_as<NotFoundError>(
      http(404, R"({"error":"Sandbox not found","code":"SANDBOX_NOT_FOUND"})"));
  EXPECT_EQ(missing.code(), "SANDBOX_NOT_FOUND");
  EXPECT_EQ(missing.api_message(), "Sandbox not found");
  const auto conflict =
      catch_as<ConflictError>(http(409, R"({"error":"VOLUME_IN_USE","message":"busy"})"));
  EXPECT_EQ(conflict.code(), "VOLUME_IN_USE");
  EXPECT_EQ(conflict.api_message(), "busy");
  const auto bad = catch_as<ApiError>(http(400, R"({"error":"Is a directory","code":"EISDIR"})"));
  EXPECT_EQ(bad.status(), 400);
  EXPECT_EQ(bad.code(), "EISDIR");
}

TEST(ErrorTableTest, TimeoutsRateLimitsAndServerErrorsAreTransient) {
  const auto t408 = catch_as<WorkspaceTransientError>(http(408, "{}"));
  EXPECT_FALSE(t408.may_have_been_admitted());
  const auto t504 = catch_as<WorkspaceTransientError>(http(504, "gateway"));
  EXPECT_TRUE(t504.may_have_been_admitted());
  EXPECT_EQ(t504.http_status(), 504);
  const auto body_retry =
      catch_as<WorkspaceTransientError>(http(429, R"({"error":"x","retryAfterS":12})"));
  EXPECT_FALSE(body_retry.may_have_been_admitted());
  EXPECT_EQ(body_retry.retry_after(), 12s);
  const auto header_retry =
      catch_as<WorkspaceTransientError>(http(429, R"({"error":"x"})", {{"retry-after", "30"}}));
  EXPECT_EQ(header_retry.retry_after(), 30s);
  const auto absurd = catch_as<WorkspaceTransientError>(
      http(429, R"({"retryAfterS":1e300})", {{"retry-after", "5"}}));
  EXPECT_EQ(absurd.retry_after(), 5s) << "an absurd body value falls back to the header";
  EXPECT_EQ(catch_as<WorkspaceTransientError>(http(429, "{}")).retry_after(), std::nullopt);
  // Over a day is no advice (and 9e18 s overflowed into a negative wait).
  EXPECT_EQ(
      catch_as<WorkspaceTransientError>(http(429, "{}", {{"retry-after", "9200000000000000000"}}))
          .retry_after(),
      std::nullopt);
  for (long status : {500L, 502L, 503L}) {
    const auto e = catch_as<WorkspaceTransientError>(http(status, "oops"));
    EXPECT_EQ(e.http_status(), status);
  }
}

TEST(ErrorTableTest, NotImplementedIsNotSupportedByThisPlatform) {
  const auto e = catch_as<WorkspaceNotSupportedError>(http(501, R"({"error":"Not implemented"})"));
  EXPECT_NE(std::string(e.what()).find("not supported by this platform"), std::string::npos);
}

TEST(ErrorTableTest, TransportFailuresTellWhetherTheRequestWentOut) {
  EXPECT_FALSE(catch_as<WorkspaceTransientError>(failed(TransportFailure::kCouldNotConnect, false))
                   .may_have_been_admitted());
  for (const auto failure : {TransportFailure::kConnectionFailed, TransportFailure::kTimedOut}) {
    EXPECT_TRUE(catch_as<WorkspaceTransientError>(failed(failure, true)).may_have_been_admitted());
    EXPECT_FALSE(
        catch_as<WorkspaceTransientError>(failed(failure, false)).may_have_been_admitted());
  }
  catch_as<WorkspaceCancelledError>(failed(TransportFailure::kCancelled, true));
  const auto other = catch_as<WorkspaceError>(failed(TransportFailure::kOther, false));
  EXPECT_NE(std::string(other.what()).find("transport failure (scripted)"), std::string::npos);
  auto over = failed(TransportFailure::kAnswerTooLarge, true);
  over.answer_limit = 4096;
  try {
    throw_transport_error(over, "GET /x", kSecret);
  } catch (const WorkspaceTransientError& e) {
    ADD_FAILURE() << "an oversized answer is not transient: " << e.what();
  } catch (const WorkspaceError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 4096 bytes"), std::string::npos);
  }
}

TEST(ErrorTableTest, TheKeyIsRedactedFromEveryMessage) {
  const std::string echo = std::string(R"({"error":"bad key )") + kSecret + R"("})";
  for (long status : {400L, 401L, 404L, 429L, 500L, 501L}) {
    try {
      throw_transport_error(http(status, echo), "GET /x", kSecret);
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos) << e.what();
    }
  }
  auto failure = failed(TransportFailure::kConnectionFailed, true);
  failure.detail = std::string("X-API-Key: ") + kSecret;
  try {
    throw_transport_error(failure, "GET /x", kSecret);
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos) << e.what();
  }
  EXPECT_EQ(redact("X-API-Key: abc\nAuthorization: Bearer zzz", ""),
            "X-API-Key: [REDACTED]\nAuthorization: [REDACTED]");
}

// The key cut by the message's 300-byte limit would no longer match it: the
// body is redacted whole first. Every offset of the key around the cut.
TEST(ErrorTableTest, AKeyAcrossTheMessageCutIsRedactedNotCut) {
  const std::string key = kSecret;
  for (std::size_t at = 280; at <= 300; ++at) {
    const std::string page = "<html>" + std::string(at - 6, 'p') + key + " more</html>";
    try {
      throw_transport_error(http(502, page), "GET /x", kSecret);
    } catch (const std::exception& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find(key.substr(0, 8)), std::string::npos) << at << ": " << what;
      EXPECT_LT(what.size(), 400u);
    }
  }
}

// Answers full of header names: every value masked, the message bounded,
// and the work linear (each name used to lower-case the whole text again: a
// 1.1 MB answer took minutes).
TEST(ErrorTableTest, AnswersFullOfHeaderNamesAreRedactedInOnePass) {
  std::string bomb;
  for (int i = 0; i < 100000; ++i) bomb += i % 2 == 0 ? "x-api-key:a," : "Authorization:b,";
  const std::string redacted = redact(bomb, kSecret);
  std::size_t masks = 0;
  for (std::size_t at = redacted.find("[REDACTED]"); at != std::string::npos;
       at = redacted.find("[REDACTED]", at + 1)) {
    ++masks;
  }
  EXPECT_EQ(masks, 100000u);
  EXPECT_EQ(redacted.find(":a,"), std::string::npos);
  EXPECT_EQ(redacted.find(":b,"), std::string::npos);
  EXPECT_EQ(redact(std::string(kSecret) + kSecret + "|" + kSecret, kSecret),
            "[REDACTED][REDACTED]|[REDACTED]");
  try {
    throw_transport_error(http(500, R"({"error":")" + bomb + R"("})"), "GET /x", kSecret);
  } catch (const std::exception& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
}

TEST(ErrorBodyTest, CodeAndSentenceFollowTheSdkRules) {
  EXPECT_EQ(parse_error_body(R"({"error":"Nope","code":"X_Y"})").code, "X_Y");
  EXPECT_EQ(parse_error_body(R"({"error":"ACCOUNT_SCOPE_REQUIRED","message":"m"})").code,
            "ACCOUNT_SCOPE_REQUIRED");
  EXPECT_EQ(parse_error_body(R"({"error":"ACCOUNT_SCOPE_REQUIRED","message":"m"})").message, "m");
  EXPECT_EQ(parse_error_body(R"({"error":"Plain sentence"})").code, "");
  EXPECT_EQ(parse_error_body("not json").message, "not json");
  EXPECT_EQ(parse_error_body(std::string(1000, 'x')).message, std::string(1000, 'x'));
}

// Every row of the table again, as a caller of the client meets it: one
// scripted answer or failure per row, the exact exception type.
struct Row {
  std::string name;
  std::function<void(ScriptedTransport&)> script;
  std::type_index type;
  std::optional<bool> admitted = std::nullopt;  // for WorkspaceTransientError
};

TEST(ErrorTableTest, EveryRowReachesACallerOfTheClient) {
  const auto status = [](long code) {
    return [code](ScriptedTransport& t) { t.answer(code, R"({"error":"E","code":"C"})"); };
  };
  const auto failure = [](TransportFailure kind, bool sent) {
    return [kind, sent](ScriptedTransport& t) { t.fail(kind, sent); };
  };
  const std::vector<Row> rows = {
      {"400", status(400), typeid(ApiError)},
      {"401", status(401), typeid(WorkspaceAuthenticationError)},
      {"402", status(402), typeid(PaymentRequiredError)},
      {"403", status(403), typeid(WorkspaceAuthenticationError)},
      {"404", status(404), typeid(NotFoundError)},
      {"408", status(408), typeid(WorkspaceTransientError), false},
      {"409", status(409), typeid(ConflictError)},
      {"418", status(418), typeid(ApiError)},
      {"429", status(429), typeid(WorkspaceTransientError), false},
      {"500", status(500), typeid(WorkspaceTransientError), true},
      {"501", status(501), typeid(WorkspaceNotSupportedError)},
      {"502", status(502), typeid(WorkspaceTransientError), true},
      {"503", status(503), typeid(WorkspaceTransientError), true},
      {"504", status(504), typeid(WorkspaceTransientError), true},
      {"302", status(302), typeid(ApiError)},
      {"cancelled", failure(TransportFailure::kCancelled, true), typeid(WorkspaceCancelledError)},
      {"refused", failure(TransportFailure::kCouldNotConnect, false),
       typeid(WorkspaceTransientError), false},
      {"deadline, sent", failure(TransportFailure::kTimedOut, true),
       typeid(WorkspaceTransientError), true},
      {"deadline, unsent", failure(TransportFailure::kTimedOut, false),
       typeid(WorkspaceTransientError), false},
      {"hung up", failure(TransportFailure::kConnectionFailed, true),
       typeid(WorkspaceTransientError), true},
      {"too large", failure(TransportFailure::kAnswerTooLarge, true), typeid(WorkspaceError)},
      {"other", failure(TransportFailure::kOther, false), typeid(WorkspaceError)},
  };
  for (const auto& row : rows) {
    auto transport = std::make_shared<ScriptedTransport>();
    row.script(*transport);
    Client client({.api_key = kSecret, .api_url = "https://scripted.test", .transport = transport});
    try {
      client.get_sandbox("sbx_1");
      ADD_FAILURE() << row.name << ": no error";
    } catch (const std::exception& e) {
      EXPECT_EQ(std::type_index(typeid(e)), row.type) << row.name << ": " << e.what();
      EXPECT_NE(dynamic_cast<const WorkspaceError*>(&e), nullptr) << row.name;
      EXPECT_NE(std::string(e.what()).find("GET /api/sandboxes/sbx_1"), std::string::npos)
          << row.name << ": " << e.what();
      if (row.admitted) {
        const auto* transient = dynamic_cast<const WorkspaceTransientError*>(&e);
        ASSERT_NE(transient, nullptr) << row.name;
        EXPECT_EQ(transient->may_have_been_admitted(), *row.admitted) << row.name;
      }
    }
  }
}

TEST(CurlFailureTest, EachCurlCodeIsOneTransportFailure) {
  using internal::failure_of_curl_code;
  EXPECT_EQ(failure_of_curl_code(CURLE_OK, false), TransportFailure::kNone);
  EXPECT_EQ(failure_of_curl_code(CURLE_ABORTED_BY_CALLBACK, false), TransportFailure::kCancelled);
  for (const CURLcode code : {CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_RESOLVE_HOST,
                              CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR}) {
    EXPECT_EQ(failure_of_curl_code(code, false), TransportFailure::kCouldNotConnect) << code;
  }
  EXPECT_EQ(failure_of_curl_code(CURLE_OPERATION_TIMEDOUT, false), TransportFailure::kTimedOut);
  for (const CURLcode code :
       {CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE,
        CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_HTTP2_STREAM}) {
    EXPECT_EQ(failure_of_curl_code(code, false), TransportFailure::kConnectionFailed) << code;
  }
  EXPECT_EQ(failure_of_curl_code(CURLE_WRITE_ERROR, true), TransportFailure::kAnswerTooLarge);
  EXPECT_EQ(failure_of_curl_code(CURLE_WRITE_ERROR, false), TransportFailure::kOther);
  EXPECT_EQ(failure_of_curl_code(CURLE_URL_MALFORMAT, false), TransportFailure::kOther);
}

}  // namespace
}  // namespace lizard::api
