#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tocsin {

// Strips ASCII whitespace (space, tab, CR, LF, VT, FF) from both ends.
std::string_view Trim(std::string_view s);

// Splits on `sep`; with skip_empty, empty pieces are dropped.
std::vector<std::string_view> Split(std::string_view s, char sep, bool skip_empty = false);

// Splits on runs of ASCII whitespace; never yields empty pieces.
std::vector<std::string_view> SplitWhitespace(std::string_view s);

std::string Join(const std::vector<std::string>& parts, std::string_view sep);

// Whole-string numeric parsers: no sign for unsigned, no trailing garbage, no overflow.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<uint64_t> ParseUint64(std::string_view s);
// Accepts an optional 0x/0X prefix.
std::optional<uint64_t> ParseHex(std::string_view s);
std::optional<double> ParseDouble(std::string_view s);

// Standard base64 (RFC 4648 section 4, padded), as Kubernetes writes *-data fields. Decoding is
// strict: nullopt on a character outside the alphabet or bad padding. (yaml-cpp 0.7's decoder
// reads out of bounds on bytes >= 0x80, so it is not used.)
std::string EncodeBase64(std::string_view bytes);
std::optional<std::string> DecodeBase64(std::string_view text);

// Text from a file, a log or a cluster made safe for a terminal: valid UTF-8 kept, control
// characters (C0, DEL, C1: terminal escapes, line breaks that would forge table rows) and
// invalid bytes written as \n, \r, \t or \xNN (a C1 character as \u0080..\u009f).
std::string EscapeControl(std::string_view s);

// Quotes a value for messages: printable ASCII kept, everything else \xNN, cut at `max` bytes.
std::string Quote(std::string_view s, size_t max = 80);

}  // namespace tocsin
