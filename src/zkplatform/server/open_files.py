"""The worker processes' limit of open files, raised to what the system allows.

Every open stream holds a connection, and a watch over HTTP/1.1 is a connection of its own, so a
worker needs a file descriptor per stream it may hold. Processes start with a soft limit far
below that (systemd and most shells give 1,024) under a much higher hard limit; a server that
kept the soft one would fail to accept connections, with EMFILE in its log, long before its
stream limit. As Go's runtime does at start, the soft limit is raised to the hard one, which
only the administrator can raise (`LimitNOFILE=` in a systemd unit, `ulimit -Hn`). The workers
inherit it.
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("zkplatform")

# Descriptors a worker holds besides its streams: the listening socket, the store's pool and
# LISTEN connection, logs, the metrics port, and connections accepted but not yet streaming.
HEADROOM = 256


def raise_open_files_limit(streams: int) -> int:
    """Raise the soft limit of open files to the hard one, warn when that is too few for
    `streams` open streams a worker; the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, streams + HEADROOM)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError) as error:  # a sandbox may refuse: keep what there is, and say it below
            log.debug("could not raise the limit of open files from %d to %d: %s", soft, wanted, error)
    if soft < streams + HEADROOM:
        log.warning(
            "a worker may open %d files, fewer than its %d streams need: raise the hard limit of open files "
            "(LimitNOFILE= in the systemd unit, ulimit -Hn) to at least %d, or lower ZKPLATFORM_MAX_STREAMS",
            soft,
            streams,
            streams + HEADROOM,
        )
    return soft
