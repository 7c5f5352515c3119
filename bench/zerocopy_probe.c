/* Does MSG_ZEROCOPY pay on this path? (issue 22; bench/net_compare.sh runs it across a veth pair)
     zerocopy_probe recv IP PORT SIZE ITERS        receives ITERS messages of SIZE bytes, prints
                                                   its CPU time (user + sys) per GB
     zerocopy_probe send IP PORT SIZE ITERS [zc]   sends them, with MSG_ZEROCOPY when "zc"
   The sender prints "GBPS CPU_S_PER_GB COPIED CALLS": its throughput, its CPU time (user + sys)
   per GB, and how many of its CALLS zerocopy sends the kernel completed by copying after all
   (SO_EE_CODE_ZEROCOPY_COPIED: loopback and veth deliver to a local socket, which cannot keep
   the sender's pages).
   With zc every message waits for its completions before the buffer is sent again, as a
   collective reusing its buffers must. */
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
static double cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
static void die(const char* what) {
  perror(what);
  exit(1);
}

/* Reads zerocopy completions until sends [0, calls) are all complete; counts copied ones. */
static void await_completions(int fd, unsigned calls, unsigned* done, long* copied) {
  while (*done < calls) {
    struct pollfd p = {fd, 0, 0};
    if (poll(&p, 1, 10000) != 1) die("poll (zerocopy completion)");
    char control[128];
    struct msghdr m = {0};
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) continue;
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      struct sock_extended_err* e = (struct sock_extended_err*)CMSG_DATA(c);
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) *copied += e->ee_data - e->ee_info + 1;
      if (e->ee_data + 1 > *done) *done = e->ee_data + 1;
    }
  }
}

int main(int argc, char** argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s recv|send IP PORT SIZE ITERS [zc]\n", argv[0]);
    return 2;
  }
  int sending = strcmp(argv[1], "send") == 0, zc = argc > 6 && strcmp(argv[6], "zc") == 0;
  size_t size = strtoull(argv[4], 0, 10);
  int iters = atoi(argv[5]);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  char* buf = malloc(size);
  memset(buf, 1, size);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (!sending) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr*)&a, sizeof a) || listen(fd, 1)) die("listen");
    int c = accept(fd, 0, 0);
    if (c < 0) die("accept");
    double c0 = cpu();
    for (long left = (long)size * iters; left > 0;) {
      ssize_t k = recv(c, buf, left < (long)size ? (size_t)left : size, 0);
      if (k <= 0) die("recv");
      left -= k;
    }
    printf("%.3f\n", (cpu() - c0) / ((double)size * iters / 1e9));
    return 0;
  }
  for (int tries = 0; connect(fd, (struct sockaddr*)&a, sizeof a) != 0; ++tries) {
    if (tries == 100) die("connect");
    close(fd);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    usleep(20000);
  }
  int one = 1;
  if (zc && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one)) die("SO_ZEROCOPY");
  unsigned calls = 0, done = 0;
  long copied = 0;
  double t0 = now(), c0 = cpu();
  for (int i = 0; i < iters; ++i) {
    for (size_t off = 0; off < size;) {
      ssize_t k = send(fd, buf + off, size - off, zc ? MSG_ZEROCOPY : 0);
      if (k < 0) die("send");
      off += k;
      calls += zc;
    }
    if (zc) await_completions(fd, calls, &done, &copied);
  }
  double gb = (double)size * iters / 1e9;
  printf("%.3f %.3f %ld %u\n", gb / (now() - t0), (cpu() - c0) / gb, copied, calls);
  return 0;
}
