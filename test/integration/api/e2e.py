"""submit -> status -> redrive over the HTTP API, with nothing but Python's standard library.

    python3 test/integration/api/e2e.py API_URL KEY TENANT TARGET_URL

TARGET_URL must refuse the first attempt (4xx) and accept the next: the delivery becomes a dead letter, is
redriven, and is delivered. Prints what it saw as one JSON line; exits 1 on anything unexpected.
"""
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

api, key, tenant, target = sys.argv[1:5]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(api + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + key)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def expect(what, condition, answer):
    if not condition:
        print(json.dumps({"failed": what, "answer": answer}))
        sys.exit(1)


def wait_for_state(path, state):
    deadline = time.time() + 30
    while True:
        status, body = call("GET", path)
        if status == 200 and body["state"] == state:
            return body
        expect("state " + state, time.time() < deadline, body)
        time.sleep(0.2)


message_id = str(uuid.uuid4())
status, submitted = call("POST", "/v1/deliveries", {
    "kind": "event", "tenant": tenant, "device": "python", "messageId": message_id,
    "target": target, "payload": {"from": "python"},
})
expect("submit answers 202", status == 202 and submitted["created"], submitted)
path = "/v1/deliveries/" + urllib.parse.quote(submitted["deliveryId"], safe="")
rejected = wait_for_state(path, "rejected")
status, redriven = call("POST", "/v1/dead-letters/" + urllib.parse.quote(submitted["deliveryId"], safe="") + "/redrive")
expect("redrive answers 202", status == 202 and redriven["redriven"], redriven)
delivered = wait_for_state(path, "delivered")
print(json.dumps({"deliveryId": submitted["deliveryId"], "first": rejected["lastError"]["code"], "then": delivered["state"]}))
