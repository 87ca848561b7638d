// The protocol's fast paths against plain references: base64 (the vector
// code this machine runs, base64.cc), the in-place parse of long strings
// (lines.cc's scan inside RapidJSON's reader) and the line reader's
// hand-over of a buffer. Part of protocol_test (ctest protocol.unit).
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lines.h"
#include "wire.h"

namespace lizard::conformance {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// RFC 4648 one bit field at a time.
std::string reference_encode(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    unsigned v = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      v = v << 8 | (i + k < bytes.size() ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    const std::size_t chars = std::min<std::size_t>(4, (bytes.size() - i) * 4 / 3 + 1);
    for (std::size_t k = 0; k < 4; ++k)
      out += k < chars ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// The protocol's acceptance: a multiple of 4, the alphabet, padding only as
// the last one or two characters, and the bits past the last byte zero (the
// one encoding of those bytes: "YR==" is refused where "YQ==" is "a").
std::optional<std::string> reference_decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (std::size_t i = 0; i < text.size() - pad; ++i) {
    const char* at = std::char_traits<char>::find(kAlphabet, 64, text[i]);
    if (at == nullptr) return std::nullopt;
    v = v << 6 | static_cast<unsigned>(at - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xFF);
    }
  }
  if ((v & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

TEST(Wire, Base64MatchesAPlainReferenceAtEveryLength) {
  std::mt19937 random(15);
  for (std::size_t n = 0; n < 400; ++n) {
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(random());
    const std::string text = reference_encode(bytes);
    ASSERT_EQ(protocol::base64_encode(bytes), text) << n;
    ASSERT_EQ(protocol::base64_decode(text), bytes) << n;
  }
  std::string big(1 << 20, '\0');
  for (auto& c : big) c = static_cast<char>(random());
  EXPECT_EQ(protocol::base64_decode(protocol::base64_encode(big)), big);
}

TEST(Wire, Base64RefusesPaddingThatIsNotTheOneEncoding) {
  EXPECT_EQ(protocol::base64_decode("YQ=="), "a");
  EXPECT_EQ(protocol::base64_decode("YWI="), "ab");
  for (const char* other : {"YR==", "/x==", "YWJ=", "YWL="}) {
    EXPECT_EQ(protocol::base64_decode(other), std::nullopt) << other;
  }
}

TEST(Wire, Base64RefusesWhatThePlainReferenceRefusesAtEveryPosition) {
  // Long enough for the vector loop's steps and its scalar tail, with and
  // without padding; every byte value at every position.
  for (const std::size_t n : {96u, 97u, 98u}) {
    std::string bytes(n, '\0');
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 37 + 11);
    const std::string text = reference_encode(bytes);
    for (std::size_t at = 0; at < text.size(); ++at) {
      for (int b = 0; b < 256; ++b) {
        std::string bad = text;
        bad[at] = static_cast<char>(b);
        ASSERT_EQ(protocol::base64_decode(bad), reference_decode(bad))
            << "length " << text.size() << ", byte " << b << " at " << at;
      }
    }
  }
}

// `text` as a line read from an adapter (its own storage, NUL-terminated).
protocol::Line line_of(const std::string& text) {
  protocol::Line line;
  line.storage.reset(new char[text.size() + 1]);
  text.copy(line.storage.get(), text.size());
  line.storage[text.size()] = '\0';
  line.data = line.storage.get();
  line.size = text.size();
  return line;
}

// The in-place parse of a line against RapidJSON's own parse of a copy.
std::string reparsed(const std::string& json, bool in_place) {
  rapidjson::Document doc;
  protocol::Line line = line_of(json);
  rapidjson::ParseResult result;
  if (in_place) {
    result = protocol::parse_line(doc, line, false);
  } else {
    doc.Parse<rapidjson::kParseIterativeFlag>(json.c_str());
    result = rapidjson::ParseResult(doc.GetParseError(), doc.GetErrorOffset());
  }
  if (result.IsError()) {
    return "error " + std::to_string(result.Code()) + " at " + std::to_string(result.Offset());
  }
  rapidjson::StringBuffer out;
  rapidjson::Writer<rapidjson::StringBuffer> w(out);
  doc.Accept(w);
  return out.GetString();
}

TEST(Wire, LongStringsParseInPlaceAsRapidJsonParsesThem) {
  const std::string run(100, 'x');
  const std::vector<std::string> cases = {
      R"({"data":")" + std::string(5000, 'A') + R"("})",
      // Escapes between long runs: the runs after them move back in place.
      R"({"a":")" + run + R"(\/)" + run + R"(\u00e9\n)" + run + R"(\"\\)" + run + R"("})",
      R"({"k)" + run + R"(\t":[")" + run + R"(\ud83d\ude00)" + run + R"(",1,true]})",
      R"(["é)" + run + "ü" + run + R"("])",
      // Errors: a control character, a bad escape, a missing quote.
      "{\"a\":\"" + run + "\x01" + run + "\"}",
      R"({"a":")" + run + R"(\q"})",
      R"({"a":")" + run,
  };
  for (const auto& json : cases) {
    for (std::size_t cut : {json.size(), json.size() - 1, json.size() / 2}) {
      const std::string text = json.substr(0, cut);
      EXPECT_EQ(reparsed(text, true), reparsed(text, false)) << text;
    }
  }
}

// A line of a few hundred KB of brackets would overflow the stack of a
// recursive parser (and of every later walk of the document): parsed
// iteratively, it is an error past 64 levels, whatever its depth.
TEST(Wire, DeeplyNestedLinesAreAnErrorNotACrash) {
  const auto nested = [](std::size_t depth) {
    return R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(depth - 1, '[') +
           std::string(depth - 1, ']') + "}";
  };
  EXPECT_EQ(reparsed(nested(64), true), reparsed(nested(64), false));
  for (const std::size_t depth : {65u, 1000u, 300000u}) {
    protocol::Line line = line_of(nested(depth));
    rapidjson::Document doc;
    const rapidjson::ParseResult result = protocol::parse_line(doc, line, depth == 65);
    EXPECT_EQ(result.Code(), rapidjson::kParseErrorTermination) << depth;
    EXPECT_EQ(protocol::parse_error_text(result), "nested deeper than 64 levels");
    EXPECT_TRUE(doc.IsNull());
  }
}

TEST(Wire, LinesAreSplitAndHandedOverWhole) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string big(300 * 1024, 'b');
  const std::string input = "one\n\ntwo\n" + big + "\nthree\n" + big + "\n" + "partial";
  std::thread writer([&] {
    for (std::size_t at = 0; at < input.size();) {
      const ssize_t n =
          ::write(fds[1], input.data() + at, std::min<std::size_t>(7000, input.size() - at));
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    ::close(fds[1]);
  });
  protocol::LineReader reader(fds[0]);
  std::vector<std::string> lines;
  while (reader.fill() > 0) {
    while (auto line = reader.next()) {
      EXPECT_EQ(line->data[line->size], '\0');
      lines.emplace_back(line->view());
    }
  }
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "", "two", big, "three", big}));
  EXPECT_EQ(reader.partial_size(), 7u);
  EXPECT_EQ(reader.partial_begin(4), "part");
  reader.drop_partial();
  EXPECT_EQ(reader.partial_size(), 0u);
}

}  // namespace
}  // namespace lizard::conformance
