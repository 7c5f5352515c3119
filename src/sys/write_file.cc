#include "sys/write_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tocsin {

Status WriteUserFile(const std::string& path, std::string_view text, std::string_view name) {
  std::string where = std::string(name) + " " + path;
  int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return Status::IoError(where + ": " + strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? strerror(errno) : "short write";
      close(fd);
      return Status::IoError(where + ": write: " + why);
    }
    done += static_cast<size_t>(n);
  }
  // A reader may look right after we exit (the kubelet reads a termination message then). A
  // device or pipe cannot be synced (EINVAL).
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    std::string why = strerror(errno);
    close(fd);
    return Status::IoError(where + ": fsync: " + why);
  }
  if (close(fd) != 0) return Status::IoError(where + ": close: " + strerror(errno));
  return Status::Ok();
}

}  // namespace tocsin
