#pragma once

#include <string>
#include <string_view>

namespace tocsin {

// RFC 3986 percent-encoding for a URL query value: unreserved characters (A-Z a-z 0-9 - . _ ~)
// kept, every other byte %XX.
std::string PercentEncode(std::string_view s);

// Text for XML content and attribute values (JUnit reports, SVG): & < > " ' as entities, the
// control characters XML 1.0 forbids (all but tab, newline, carriage return) as '?'.
std::string XmlEscape(std::string_view s);

}  // namespace tocsin
