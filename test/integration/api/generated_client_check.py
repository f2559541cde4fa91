"""Submits, reads and redrives through a Python client generated from redeliver's /openapi.json.

Run by python-client.test.ts with the generated package on PYTHONPATH; prints one JSON line of what it saw.
Environment: API (base URL), KEY, TENANT, OK_TARGET (answers 202), REFUSE_TARGET (400 at first, then 202).
"""
import json
import os
import time

from redeliver_client import AuthenticatedClient
from redeliver_client.api.default import get_dead_letter, get_delivery, redrive, submit
from redeliver_client.models import Accepted, DeadLetter, DeliveryInput, DeliveryStatus, Redriven

client = AuthenticatedClient(base_url=os.environ["API"], token=os.environ["KEY"], raise_on_unexpected_status=True)
tenant = os.environ["TENANT"]


def wait_for(read, done, what, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: last saw {value!r}")
        time.sleep(0.2)


def delivery(message_id, target):
    body = DeliveryInput.from_dict(
        {"kind": "event", "tenant": tenant, "device": "py-1", "messageId": message_id, "target": target, "payload": {"from": "python"}}
    )
    accepted = submit.sync(client=client, body=body)
    assert isinstance(accepted, Accepted), accepted
    return accepted


def state_of(delivery_id):
    status = get_delivery.sync(delivery_id, client=client)
    assert isinstance(status, DeliveryStatus), status
    return status


ok = delivery("py-ok", os.environ["OK_TARGET"])
again = delivery("py-ok", os.environ["OK_TARGET"])
delivered = wait_for(lambda: state_of(ok.delivery_id), lambda s: s.state.value == "delivered", "the delivery to be delivered")

refused = delivery("py-refused", os.environ["REFUSE_TARGET"])
dead = wait_for(
    lambda: get_dead_letter.sync(refused.delivery_id, client=client),
    lambda d: isinstance(d, DeadLetter),
    "the dead letter",
)
redriven = redrive.sync(refused.delivery_id, client=client)
assert isinstance(redriven, Redriven), redriven
after = wait_for(lambda: state_of(refused.delivery_id), lambda s: s.state.value == "delivered", "the redriven delivery")

print(
    json.dumps(
        {
            "submitted": {"deliveryId": ok.delivery_id, "created": ok.created, "again": again.created},
            "read": {"state": delivered.state.value, "attempts": delivered.attempts, "codes": [a.code for a in delivered.attempt_log]},
            "deadLetter": {"deliveryId": dead.delivery_id, "outcome": dead.outcome.value, "code": dead.last_error.code},
            "redriven": {"redriven": redriven.redriven, "state": after.state.value},
        }
    )
)
