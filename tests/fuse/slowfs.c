/* slowfs: a FUSE passthrough filesystem for tests that adds a fixed latency to every operation,
 * or stops answering on demand, so that `tocsin bench storage` can be checked against a slow
 * and a hung mount.
 *
 *   slowfs MOUNTPOINT -f -o backing=DIR[,latency_us=N][,hang_after_writes=N]
 *
 * latency_us: every operation sleeps N microseconds first.
 * hang_after_writes: after N write() calls every later operation blocks until unmount (as a
 * lost server does). Creating a file named ".hang" in the mount root does the same at once.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static struct {
  const char* backing;
  int latency_us;
  int hang_after_writes;
} opts = {NULL, 0, -1};

static const struct fuse_opt option_spec[] = {
    {"backing=%s", offsetof(__typeof__(opts), backing), 0},
    {"latency_us=%d", offsetof(__typeof__(opts), latency_us), 0},
    {"hang_after_writes=%d", offsetof(__typeof__(opts), hang_after_writes), 0},
    FUSE_OPT_END};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int writes = 0;
static int hung = 0;

/* Called first by every operation. */
static void gate(void) {
  if (opts.latency_us > 0) {
    struct timespec ts = {opts.latency_us / 1000000, (opts.latency_us % 1000000) * 1000L};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&mu);
  while (hung) pthread_cond_wait(&never, &mu); /* nobody signals: blocked until unmount */
  pthread_mutex_unlock(&mu);
}

static void full(char* out, const char* path) {
  snprintf(out, PATH_MAX, "%s%s", opts.backing, path);
}

static int sf_getattr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  gate();
  char p[PATH_MAX];
  full(p, path);
  return lstat(p, st) == 0 ? 0 : -errno;
}

static int sf_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info* fi, enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  gate();
  char p[PATH_MAX];
  full(p, path);
  DIR* d = opendir(p);
  if (!d) return -errno;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    struct stat st = {0};
    st.st_ino = e->d_ino;
    st.st_mode = e->d_type << 12;
    if (fill(buf, e->d_name, &st, 0, 0)) break;
  }
  closedir(d);
  return 0;
}

static int sf_mkdir(const char* path, mode_t mode) {
  gate();
  char p[PATH_MAX];
  full(p, path);
  return mkdir(p, mode) == 0 ? 0 : -errno;
}

static int sf_unlink(const char* path) {
  gate();
  char p[PATH_MAX];
  full(p, path);
  return unlink(p) == 0 ? 0 : -errno;
}

static int sf_rmdir(const char* path) {
  gate();
  char p[PATH_MAX];
  full(p, path);
  return rmdir(p) == 0 ? 0 : -errno;
}

static int sf_create(const char* path, mode_t mode, struct fuse_file_info* fi) {
  gate();
  if (strcmp(path, "/.hang") == 0) {
    pthread_mutex_lock(&mu);
    hung = 1;
    pthread_mutex_unlock(&mu);
    return -EIO;
  }
  char p[PATH_MAX];
  full(p, path);
  int fd = open(p, fi->flags & ~O_DIRECT, mode);
  if (fd < 0) return -errno;
  fi->fh = fd;
  return 0;
}

static int sf_open(const char* path, struct fuse_file_info* fi) {
  gate();
  char p[PATH_MAX];
  full(p, path);
  int fd = open(p, fi->flags & ~O_DIRECT);
  if (fd < 0) return -errno;
  fi->fh = fd;
  return 0;
}

static int sf_read(const char* path, char* buf, size_t size, off_t off,
                   struct fuse_file_info* fi) {
  (void)path;
  gate();
  ssize_t n = pread(fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int sf_write(const char* path, const char* buf, size_t size, off_t off,
                    struct fuse_file_info* fi) {
  (void)path;
  gate();
  pthread_mutex_lock(&mu);
  if (opts.hang_after_writes >= 0 && writes++ >= opts.hang_after_writes) hung = 1;
  pthread_mutex_unlock(&mu);
  gate(); /* the write that crossed the line hangs too */
  ssize_t n = pwrite(fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int sf_fsync(const char* path, int datasync, struct fuse_file_info* fi) {
  (void)path;
  gate();
  return (datasync ? fdatasync(fi->fh) : fsync(fi->fh)) == 0 ? 0 : -errno;
}

static int sf_release(const char* path, struct fuse_file_info* fi) {
  (void)path;
  close(fi->fh);
  return 0;
}

static int sf_truncate(const char* path, off_t size, struct fuse_file_info* fi) {
  gate();
  if (fi) return ftruncate(fi->fh, size) == 0 ? 0 : -errno;
  char p[PATH_MAX];
  full(p, path);
  return truncate(p, size) == 0 ? 0 : -errno;
}

static int sf_statfs(const char* path, struct statvfs* st) {
  (void)path;
  gate();
  return statvfs(opts.backing, st) == 0 ? 0 : -errno;
}

static int sf_utimens(const char* path, const struct timespec tv[2], struct fuse_file_info* fi) {
  (void)fi;
  gate();
  char p[PATH_MAX];
  full(p, path);
  return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static const struct fuse_operations ops = {
    .getattr = sf_getattr,
    .readdir = sf_readdir,
    .mkdir = sf_mkdir,
    .unlink = sf_unlink,
    .rmdir = sf_rmdir,
    .create = sf_create,
    .open = sf_open,
    .read = sf_read,
    .write = sf_write,
    .fsync = sf_fsync,
    .release = sf_release,
    .truncate = sf_truncate,
    .statfs = sf_statfs,
    .utimens = sf_utimens,
};

int main(int argc, char* argv[]) {
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  if (fuse_opt_parse(&args, &opts, option_spec, NULL) == -1) return 1;
  if (!opts.backing) {
    fprintf(stderr, "slowfs: -o backing=DIR is required\n");
    return 1;
  }
  char real[PATH_MAX];
  if (!realpath(opts.backing, real)) {
    perror(opts.backing);
    return 1;
  }
  opts.backing = strdup(real);
  int rc = fuse_main(args.argc, args.argv, &ops, NULL);
  fuse_opt_free_args(&args);
  return rc;
}
