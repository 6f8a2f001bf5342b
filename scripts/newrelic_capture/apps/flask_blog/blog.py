"""A small Flask blog, run under the New Relic agent to capture what the agent reports."""

from datetime import date

from flask import Flask, jsonify, request

app = Flask(__name__)

POSTS = [{"id": 1, "title": "Hello", "published": "2026-11-02", "words": 300}]


def reading_minutes(post: dict, words_per_minute: int) -> int:
    return post["words"] // words_per_minute


@app.route("/posts/<int:post_id>/reading-time")
def reading_time(post_id):
    post = next(p for p in POSTS if p["id"] == post_id)
    speed = int(request.args.get("wpm", 0))
    return jsonify(minutes=reading_minutes(post, speed))


@app.route("/archive")
def archive():
    since = date.fromisoformat(request.args.get("since", "last-week"))
    return jsonify([p for p in POSTS if date.fromisoformat(p["published"]) >= since])


# Imported last so that the views above keep the line numbers the New Relic capture recorded
# (tests/captured/newrelic_python/flask.json)
from services import services  # noqa: E402

app.register_blueprint(services)
