#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tocsin {

// Writes `text` as the whole of a file a user named (--verdict-file, --plot): created or
// truncated, never through a symlink (O_NOFOLLOW), never blocking on a FIFO without a reader
// (O_NONBLOCK), fsynced (a device or pipe need not be). Errors start with "`name` `path`: ".
Status WriteUserFile(const std::string& path, std::string_view text, std::string_view name);

}  // namespace tocsin
