"""Drive one CTFd deployment under the real New Relic Python agent (developer mode) or the real Sentry SDK.

Copied by `scripts/python_evals/ctfd.py` into the deployment's venv (site-packages/capture_server/), beside the
capture script's `drive.py`, and run there as `python -m capture_server.ctfd_drive ROOT INI|sentry SPEC`, with the
deployment folder as working directory. Every request, the first-run setup and the logins included, goes
through CTFd's WSGI application as a server would call it, with the cookies and CSRF nonce a browser carries.
"""

from __future__ import annotations

import io
import json
import re
import sys
from http.cookies import SimpleCookie
from urllib.parse import urlencode

from capture_server import monitors
from capture_server.app_traffic import FailingInput

HOST = "ctf.example.org"
NONCE = re.compile(r"""(?:csrfNonce['"]?\s*:\s*"|name="nonce"[^>]*value=")([0-9a-f]{16,})""")


class Browser:
    """One visitor: its cookies and the CSRF nonce of its session."""

    def __init__(self, app):
        self.app, self.cookies, self.nonce = app, {}, ""

    def call(self, method: str, path: str, form: dict | None = None, json_body=None, client_gone: bool = False,
             files: dict | None = None):
        body = b""
        content_type = ""
        if files is not None:  # a multipart upload, as the admin panel's file inputs send it
            boundary = "----ctfdformboundary7MA4YWxkTrZu0gW"
            parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                     for k, v in {**(form or {}), "nonce": self.nonce}.items()]
            for field, (filename, content) in files.items():
                parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"'
                             f'\r\nContent-Type: application/octet-stream\r\n\r\n'.encode() + content.encode() + b"\r\n")
            body = b"".join(parts) + f"--{boundary}--\r\n".encode()
            content_type = f"multipart/form-data; boundary={boundary}"
        elif form is not None:
            body, content_type = urlencode(form).encode(), "application/x-www-form-urlencoded"
        elif json_body is not None:
            body, content_type = json.dumps(json_body).encode(), "application/json"
        path_only, _, query = path.partition("?")
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path_only, "QUERY_STRING": query, "SCRIPT_NAME": "",
                   "SERVER_NAME": HOST, "SERVER_PORT": "443", "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_HOST": HOST,
                   "wsgi.url_scheme": "https", "wsgi.version": (1, 0), "wsgi.errors": sys.stderr,
                   "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
                   "wsgi.input": io.BufferedReader(FailingInput()) if client_gone else io.BytesIO(body),
                   "CONTENT_LENGTH": str(len(body) or (8192 if client_gone else 0)), "REMOTE_ADDR": "203.0.113.7",
                   "HTTP_USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
                   "HTTP_ACCEPT": "application/json" if json_body is not None else "text/html"}
        if content_type:
            environ["CONTENT_TYPE"] = content_type
        if self.cookies:
            environ["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if (json_body is not None or files is not None) and self.nonce:
            environ["HTTP_CSRF_TOKEN"] = self.nonce
        answer: dict = {}

        def start_response(status, headers, exc_info=None):
            answer["status"] = status
            for name, value in headers:
                if name.lower() == "set-cookie":
                    for morsel in SimpleCookie(value).values():
                        self.cookies[morsel.key] = morsel.value

        try:
            chunks = self.app(environ, start_response)
            text = b"".join(chunks).decode("utf-8", "replace")
            if hasattr(chunks, "close"):
                chunks.close()
        except Exception as exc:  # a server logs it and answers 500; the agent has recorded it already
            return f"raised {type(exc).__name__}", ""
        found = NONCE.search(text)
        if found:
            self.nonce = found.group(1)
        return answer.get("status", "no status"), text

    def form(self, page: str, path: str, fields: dict) -> str:
        """Open the page (for the session's nonce), then post its form."""
        self.call("GET", page)
        return self.call("POST", path, form={**fields, "nonce": self.nonce})[0]


def main() -> None:
    root, monitor, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, root)
    harvest, finish = monitors.start(monitor)
    from CTFd import create_app

    app = create_app()
    browsers: dict[str, Browser] = {}
    for step in spec["steps"]:
        who = step.get("as", "anonymous")
        browser = browsers.setdefault(who, Browser(app))
        op = step.get("op", "request")
        if op == "setup":
            print("setup", browser.form("/setup", "/setup", step["form"]))
        elif op == "register":
            print("register", step["form"]["name"], browser.form("/register", "/register", step["form"]))
        elif op == "login":
            print("login", who, browser.form("/login", "/login", step["form"]))
            browser.call("GET", "/challenges")  # the session's new nonce
        elif op == "page":
            print("page", step["path"], browser.call("GET", step["path"])[0])
        elif op == "harvest":
            harvest()
        else:  # a request; a form carries the session's nonce, as CTFd's pages post it
            if step.get("page"):
                browser.call("GET", step["page"])
            form = step.get("form")
            if form is not None and step.get("files") is None:
                form = {**form, "nonce": browser.nonce}
            answers = [browser.call(step["method"], step["path"], form=form, json_body=step.get("json"),
                                    client_gone=step.get("client_gone", False), files=step.get("files"))
                       for _ in range(step.get("times", 1))]
            print(step["method"], step["path"], sorted({a[0] for a in answers}), answers[-1][1][:300].replace("\n", " "))
    finish()


if __name__ == "__main__":
    main()
