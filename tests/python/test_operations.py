"""Operating the service from outside: the Prometheus metrics scraped over HTTP and
parsed with prometheus_client's OpenMetrics parser, and grpcurl on the health port."""

import json
import subprocess
import urllib.request

import grpc
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import start_server_line


def _samples(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["content-type"].startswith("application/openmetrics-text")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _value(samples, name, **labels):
    for sample in samples.get(name, []):
        if all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    return None


def test_metrics_are_scraped_and_parse(stubs, tmp_path):
    ours, commands, commands_grpc = stubs
    proc, serving = start_server_line(tmp_path / "data", "--metrics-listen", "127.0.0.1:0")
    try:
        with grpc.insecure_channel(serving["addr"]) as channel:
            client = commands_grpc.CommandServiceStub(channel)
            client.Register(commands.RegisterRequest(
                spec=commands.CommandSpec(name="deploy", description="Deploy")), timeout=10)
            for text in ["/model", "/nope-typed-by-a-user", "/deploy now"]:
                message = ours.Message(message_id="m-1")
                message.parts.add(text=text)
                client.Execute(commands.ExecuteRequest(
                    message=message,
                    task=commands.TaskSnapshot(id="t-1", state=ours.TASK_STATE_WORKING),
                    sender=commands.Sender(id="u", role=commands.PARTICIPANT_ROLE_ASSIGNEE)),
                    timeout=10)
            watch = client.WatchSpecs(commands.WatchSpecsRequest(), timeout=30)
            next(watch)
            samples = _samples(f"http://{serving['metrics_addr']}/metrics")
            watch.cancel()
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    assert _value(samples, "a2a_commands_calls_total", method="Execute", code="OK") == 3
    assert _value(samples, "a2a_commands_calls_total", method="Register", code="OK") == 1
    assert _value(samples, "a2a_commands_call_duration_seconds_count", method="Execute") == 3
    assert _value(samples, "a2a_commands_execute_outcomes_total", command="model", outcome="ok") == 1
    assert _value(samples, "a2a_commands_execute_outcomes_total", command="deploy",
                  outcome="no_handler") == 1
    # What a user typed that is not registered never becomes a label.
    assert all("nope-typed-by-a-user" not in json.dumps(s.labels)
               for family in samples.values() for s in family)
    assert _value(samples, "a2a_commands_registry_commands") == 5
    assert _value(samples, "a2a_commands_registry_revision") >= 2
    assert _value(samples, "a2a_commands_writer_group_size_count") >= 1
    assert _value(samples, "a2a_commands_watch_subscribers") == 1


def test_grpcurl_reaches_the_health_port(tmp_path):
    proc, serving = start_server_line(tmp_path / "data")
    try:
        health = serving["health_addr"]
        listed = subprocess.run(["grpcurl", "-plaintext", health, "list"],
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0, listed.stderr
        assert "grpc.health.v1.Health" in listed.stdout
        assert "a2a.commands.v1.CommandService" not in listed.stdout
        checked = subprocess.run(
            ["grpcurl", "-plaintext", health, "grpc.health.v1.Health/Check"],
            capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stderr
        assert json.loads(checked.stdout) == {"status": "SERVING"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_grpcurl_describes_every_service_it_lists(tmp_path):
    """Each listener's reflection can describe every service it lists, the API's the
    reflection services themselves included (grpcurl asks through v1alpha); the health
    port lists health alone."""
    proc, serving = start_server_line(tmp_path / "data")
    try:
        for addr in (serving["addr"], serving["health_addr"]):
            listed = subprocess.run(["grpcurl", "-plaintext", addr, "list"],
                                    capture_output=True, text=True, timeout=60)
            assert listed.returncode == 0, listed.stderr
            services = listed.stdout.split()
            if addr == serving["addr"]:
                assert "grpc.reflection.v1.ServerReflection" in services
                assert "grpc.reflection.v1alpha.ServerReflection" in services
            else:
                assert services == ["grpc.health.v1.Health"], services
            for service in services:
                described = subprocess.run(
                    ["grpcurl", "-plaintext", addr, "describe", service],
                    capture_output=True, text=True, timeout=60)
                assert described.returncode == 0, f"{addr} {service}: {described.stderr}"
                assert f"{service} is a service" in described.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=30)
