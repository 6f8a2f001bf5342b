"""Celery tasks, run under the New Relic agent to capture what the agent reports for a background job."""

from celery import Celery

app = Celery("jobs")
app.conf.update(task_always_eager=True, task_eager_propagates=True, broker_url="memory://", result_backend=None)

RECIPIENTS = {"weekly": ["ana@example.com", None]}


@app.task(name="jobs.send_digest")
def send_digest(list_name: str) -> int:
    return sum(len(address.split("@")[1]) for address in RECIPIENTS[list_name])
