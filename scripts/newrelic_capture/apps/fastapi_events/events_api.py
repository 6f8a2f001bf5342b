"""A small FastAPI service, run under the New Relic agent to capture what the agent reports."""

from datetime import datetime

from fastapi import FastAPI, Request

app = FastAPI()

EVENTS = {"launch": {"starts": "2026-12-01T18:00:00", "seats": {"total": 100, "sold": 100}}}


def seats_left(event: dict) -> int:
    seats = event["seats"]
    assert seats["sold"] < seats["total"], "sold out"
    return seats["total"] - seats["sold"]


@app.get("/events/{slug}")
async def read_event(slug: str):
    event = EVENTS[slug]
    return {"starts": datetime.fromisoformat(event["starts"]).isoformat(), "left": seats_left(event)}


@app.post("/events/{slug}/photos")
async def upload_photo(slug: str, request: Request):
    body = await request.body()
    return {"bytes": len(body)}
