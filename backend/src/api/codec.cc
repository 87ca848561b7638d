#include "lizard/api/codec.h"

#include <array>
#include <stdexcept>

namespace lizard::api {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<signed char, 256> make_decode_table() {
  std::array<signed char, 256> table{};
  for (auto& v : table) v = -1;
  for (int i = 0; i < 64; ++i)
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<signed char>(i);
  return table;
}
constexpr auto kDecode = make_decode_table();

}  // namespace

void base64_encode_append(std::string_view bytes, std::string& out) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  out.reserve(out.size() + base64_encoded_size(n));
  // Encoded a block at a time into `block` and appended: `out` is written
  // once (resize() would zero tens of MiB first).
  char block[4096];
  std::size_t used = 0;
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const unsigned v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    block[used++] = kAlphabet[(v >> 18) & 63];
    block[used++] = kAlphabet[(v >> 12) & 63];
    block[used++] = kAlphabet[(v >> 6) & 63];
    block[used++] = kAlphabet[v & 63];
    if (used == sizeof block) {
      out.append(block, used);
      used = 0;
    }
  }
  if (i < n) {
    unsigned v = p[i] << 16;
    if (i + 1 < n) v |= p[i + 1] << 8;
    block[used++] = kAlphabet[(v >> 18) & 63];
    block[used++] = kAlphabet[(v >> 12) & 63];
    block[used++] = i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    block[used++] = '=';
  }
  out.append(block, used);
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  base64_encode_append(bytes, out);
  return out;
}

std::string base64_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  unsigned acc = 0;
  int bits = 0;
  bool padding = false;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    const int v = kDecode[static_cast<unsigned char>(c)];
    if (v < 0 || padding) throw std::invalid_argument("invalid base64 text");
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

void SseParser::feed(std::string_view bytes) {
  std::size_t i = 0;
  if (skip_lf_ && !bytes.empty()) {
    if (bytes.front() == '\n') i = 1;
    skip_lf_ = false;
  }
  // Appends to the pending line unless it passed the bound.
  const auto keep = [&](std::string_view part) {
    if (dropping_line_) return;
    if (buffer_.size() + part.size() > kMaxEventBytes) {
      dropping_line_ = overflowed_ = true;
      buffer_.clear();
      return;
    }
    buffer_.append(part);
  };
  while (i < bytes.size()) {
    const std::size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {
      keep(bytes.substr(i));
      return;
    }
    keep(bytes.substr(i, end - i));
    if (dropping_line_) {
      dropping_line_ = false;
      dropping_event_ = true;  // the event it belonged to is incomplete
    } else {
      line(buffer_);
    }
    buffer_.clear();
    i = end + 1;
    if (bytes[end] == '\r') {
      if (i < bytes.size()) {
        if (bytes[i] == '\n') ++i;
      } else {
        skip_lf_ = true;
      }
    }
  }
}

void SseParser::finish() {
  buffer_.clear();
  event_.clear();
  data_.clear();
  has_data_ = false;
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {
    if (has_data_ && !dropping_event_) {
      callback_(event_.empty() ? std::string("message") : event_, data_);
    }
    event_.clear();
    data_.clear();
    has_data_ = false;
    dropping_event_ = false;
    return;
  }
  if (text.front() == ':') return;
  const std::size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (data_.size() + value.size() + 1 > kMaxEventBytes) {
      dropping_event_ = overflowed_ = true;
      data_.clear();
    }
    if (dropping_event_) return;
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
}

}  // namespace lizard::api
