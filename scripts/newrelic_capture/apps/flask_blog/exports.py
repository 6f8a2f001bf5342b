"""A slow export under gunicorn, run under the New Relic agent to capture what a worker timeout reports."""

import time

from flask import Flask

app = Flask(__name__)


@app.route("/export")
def export():
    time.sleep(10)  # longer than the worker's --timeout: gunicorn aborts the worker mid-request
    return "done"
