"""Time formats the API and the CRI log use, and Go's duration string. Pure."""

import datetime


def rfc3339(t):
    return datetime.datetime.fromtimestamp(int(t), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def nano_time(t):
    """The CRI log timestamp: RFC 3339 with nanoseconds."""
    dt = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + "%09dZ" % int(round((t % 1) * 1e9) % 1000000000)


def parse_time(s):
    if not s:
        return None
    s = s.rstrip("Z").split(".")[0]
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def go_duration(seconds):
    """Go's time.Duration.String() for whole seconds: 10s, 1m20s, 5m0s."""
    s = int(seconds)
    if s < 60:
        return "%ds" % s
    m, s = divmod(s, 60)
    if m < 60:
        return "%dm%ds" % (m, s)
    h, m = divmod(m, 60)
    return "%dh%dm%ds" % (h, m, s)
