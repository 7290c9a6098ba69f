"""The chat-completions call against the loopback server: answers, provenance, every injected fault."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from generation import client
from generation.fakeserver import FakeServer

FAST = client.RetryPolicy(attempts=3, backoff_s=0.01, retry_after_max_s=1.0)


def request(**kw) -> client.ChatRequest:
    base = dict(
        model="m-requested",
        messages=[{"role": "user", "content": "hello"}],
        temperature=0.3,
        seed=7,
        max_tokens=50,
        timeout_s=2.0,
    )
    return client.ChatRequest(**(base | kw))


def call(server: FakeServer, faults: list[str], **kw) -> client.Answer:
    server.faults = list(faults)
    api = client.make_client(server.base_url, api_key="secret-key-123", timeout_s=2.0)
    sleeps: list[float] = []
    answer = client.chat_complete(api, request(**kw), retry=FAST, sleep=sleeps.append)
    answer.provenance["_sleeps"] = sleeps
    return answer


def test_an_answer_and_its_provenance(server):
    answer = call(server, [])
    assert answer.status == client.OK
    assert answer.text.startswith("ANSWER:")
    p = answer.provenance
    assert p["endpoint"] == server.base_url
    assert p["model"] == "fake-model-1" and p["requested_model"] == "m-requested"
    assert p["params"] == {"temperature": 0.3, "max_tokens": 50, "seed": 7, "timeout_s": 2.0}
    assert p["response_id"].startswith("chatcmpl-") and p["created"] == 1_700_000_000
    assert p["finish_reason"] == "stop"
    assert p["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    assert p["latency_ms"] > 0 and len(p["attempts"]) == 1
    assert "secret-key-123" not in repr(p)
    sent = server.requests[-1]
    assert sent["model"] == "m-requested" and sent["seed"] == 7 and sent["temperature"] == 0.3
    assert sent["max_tokens"] == 50 and sent["messages"] == [{"role": "user", "content": "hello"}]


def test_the_same_request_gets_the_same_answer(server):
    assert call(server, []).text == call(server, []).text


def test_unset_parameters_are_not_sent(server):
    call(server, [], temperature=None, seed=None, max_tokens=None)
    assert not {"temperature", "seed", "max_tokens"} & set(server.requests[-1])


def test_429_waits_for_retry_after_then_succeeds(server):
    server.retry_after_s = 0.25
    answer = call(server, ["429", "429"])
    assert answer.status == client.OK
    assert answer.provenance["_sleeps"] == [0.25, 0.25]
    assert [a.get("retry_after_s") for a in answer.provenance["attempts"]] == [0.25, 0.25, None]


def test_retry_after_is_capped(server):
    server.retry_after_s = 3600
    answer = call(server, ["429"])
    assert answer.status == client.OK and answer.provenance["_sleeps"] == [1.0]


@pytest.mark.parametrize("fault", ["500", "503", "malformed", "truncated", "close", "timeout"])
def test_a_passing_fault_is_retried(fault):
    with FakeServer(timeout_s=3.0) as server:
        answer = call(server, [fault], timeout_s=0.5)
    assert answer.status == client.OK
    first, second = answer.provenance["attempts"]
    assert "error" in first and "error" not in second
    assert answer.provenance["_sleeps"] == [0.01]


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("500", "HTTP 500"),
        ("malformed", "unreadable answer"),
        ("truncated", "connection failed"),
        ("close", "connection failed"),
    ],
)
def test_a_lasting_fault_fails_after_the_bounded_attempts(server, fault, says):
    answer = call(server, [fault] * 5)
    assert answer.status == client.FAILED and says in answer.error
    assert len(answer.provenance["attempts"]) == 3
    assert answer.provenance["_sleeps"] == [0.01, 0.02]
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried(server):
    answer = call(server, ["400"])
    assert answer.status == client.FAILED and "HTTP 400" in answer.error
    assert len(server.requests) == 1


def test_empty_and_refusal_are_recorded_as_such(server):
    empty = call(server, ["empty"])
    assert (empty.status, empty.text) == (client.EMPTY, "")
    refusal = call(server, ["refusal"])
    assert refusal.status == client.REFUSAL and refusal.provenance["refusal"] == "I can't help with that."
    assert len(server.requests) == 2  # neither is retried


def test_a_dead_server_fails_the_call():
    server = FakeServer().start()
    url = server.base_url
    server.stop()
    api = client.make_client(url, timeout_s=1.0)
    answer = client.chat_complete(api, request(), retry=FAST, sleep=lambda s: None)
    assert answer.status == client.FAILED and "connection failed" in answer.error


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://127.0.0.1/v1", "scheme 'ftp'"),
        ("http://user:pw@127.0.0.1:8000/v1", "holds credentials"),
        ("https://sk-abc@api.example.org/v1", "holds credentials"),
        ("http://127.0.0.1:99999/v1", "not a URL"),
        ("http:///v1", "no host"),
        ("http://127.0.0.1/v1?key=abc", "query or fragment"),
        ("", "empty"),
        ("127.0.0.1:8000", "scheme"),
    ],
)
def test_endpoint_urls_are_checked(url, says):
    with pytest.raises(client.EndpointRefused, match=says) as refused:
        client.endpoint_check(url)
    assert "pw" not in str(refused.value) and "sk-abc" not in str(refused.value)


def test_a_good_endpoint_loses_its_trailing_slash():
    assert client.endpoint_check(" http://127.0.0.1:8000/v1/ ") == "http://127.0.0.1:8000/v1"


@given(st.text(max_size=300))
def test_endpoint_check_refuses_or_accepts_never_crashes(url):
    try:
        checked = client.endpoint_check(url)
    except client.EndpointRefused as exc:
        assert exc.code == "endpoint_refused"
    else:
        assert checked.split("://")[0].lower() in ("http", "https") and "@" not in checked


@given(st.integers(min_value=1, max_value=50), st.one_of(st.none(), st.floats(min_value=-1e9, max_value=1e9)))
def test_waits_are_bounded(attempt, retry_after):
    policy = client.RetryPolicy()
    wait = policy.wait_s(attempt, retry_after)
    assert 0 <= wait <= max(policy.backoff_max_s, policy.retry_after_max_s)
