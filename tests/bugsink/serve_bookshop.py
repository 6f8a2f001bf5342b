"""Serve the Python demo (bookshop) with uvicorn under the real sentry-sdk, as its production process would: the SDK
started first with the DSN, the release (the deployed commit), the environment and the server's name, its default
integrations (FastAPI's and Starlette's enable themselves), and every error sent over HTTP to the DSN's server.

    BOOKSHOP_SENTRY_DSN=... BOOKSHOP_RELEASE=<sha> BOOKSHOP_PORT=<port> BOOKSHOP_DB=<file> python serve_bookshop.py

Run from the deployed application's folder (its working directory, as a service's). Stop it with SIGINT (Ctrl-C, or
a service manager's stop signal): uvicorn stops gracefully and raises the signal again once stopped, and the SDK sends
what it still holds before the process exits 0. (On SIGTERM uvicorn re-raises SIGTERM, whose default action ends the
process before anything else runs: the SDK's queue would be lost.)
"""

import os
import sys

import sentry_sdk
import uvicorn

FLUSH_GUARD_S = 60  # a hang guard on sending what is queued; a few dozen events to a loopback server take a second

sentry_sdk.init(dsn=os.environ["BOOKSHOP_SENTRY_DSN"], release=os.environ["BOOKSHOP_RELEASE"], environment="production",
                server_name="bookshop-web-1", shutdown_timeout=FLUSH_GUARD_S)
sys.path.insert(0, os.getcwd())

from bookshop.app import app  # noqa: E402

try:
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ["BOOKSHOP_PORT"]), log_level="warning")
except KeyboardInterrupt:  # the SIGINT uvicorn stopped on, raised again
    pass
sentry_sdk.flush(timeout=FLUSH_GUARD_S)
print("sentry-sdk flushed", flush=True)
