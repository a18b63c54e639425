"""Tasks and answers the tests upload and submit, and rating through the raw API."""

from __future__ import annotations

from verdict_client import Client

#: Every seeded account's password, one the server's strength check takes.
PASSWORD = "correct horse battery staple 42!"

#: Answers to the blackhat rubric that every rule accepts, A better (``sxs`` 2 of 7),
#: in the orientation the rater was shown.
A_BETTER = {
    "a": {
        "executability": "yes_fully",
        "instruction_following": "no_issues",
        "correctness": "no_issues",
    },
    "b": {
        "executability": "no_code",
        "instruction_following": "minor_issues",
        "instruction_following_explanation": "answers a different question than the one asked",
        "correctness": "no_issues",
    },
    "sxs": 2,
    "sxs_explanation": "A does what was asked; B does not.",
    "time_spent_s": 60,
}


def tasks(count: int, prefix: str = "t") -> list[dict]:
    """``count`` blackhat tasks, each comparing two answers by two models."""
    return [
        {
            "external_id": f"{prefix}-{i}",
            "prompt": f"Write a Python function that returns {i} squared.",
            "response_a": f"```python\ndef f():\n    return {i} * {i}\n```",
            "response_b": f"`{i} ** 2`",
            "model_a": "cirrus-70b",
            "model_b": "stratus-8b",
            "metadata": {"language": "python", "n": i},
        }
        for i in range(1, count + 1)
    ]


def rate(client: Client, batch_id, answers: dict | None = None) -> str:
    """Takes the rater's next task of the batch and submits ``answers`` (``A_BETTER``
    unless given), through the raw API the client has no method for; the rating's id."""
    taken = client.request("POST", f"/batches/{batch_id}/next")
    assert taken is not None, "the batch had a task for this rater"
    submitted = client.request(
        "POST", f"/assignments/{taken['assignment_id']}/submit", json=answers or A_BETTER
    )
    return submitted["rating_id"]
