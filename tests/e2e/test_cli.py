"""Settings precedence and the printed URL."""

from __future__ import annotations

import pytest
from openrl_inspect.adapters.redis import RedisSettings
from openrl_inspect.cli.launch import ServerSettings, browsable_url
from openrl_inspect.cli.main import main, parser
from openrl_inspect.cli.serve import backend_settings
from openrl_inspect.core import settings


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://127.0.0.1:9"),
        ("::", "http://127.0.0.1:9"),
        ("[::]", "http://127.0.0.1:9"),
        ("10.1.2.3", "http://10.1.2.3:9"),
        ("::1", "http://[::1]:9"),
    ],
)
def test_wildcard_listen_addresses_print_as_loopback(host: str, url: str) -> None:
    assert browsable_url(host, 9) == url


def test_command_line_beats_environment_beats_defaults() -> None:
    env = {"OPENRL_INSPECT_PORT": "9000", "OPENRL_INSPECT_HOST": "0.0.0.0"}
    got = settings.load(ServerSettings, "OPENRL_INSPECT_", env, {"port": 7000, "host": None})
    assert (got.host, got.port, got.log_level) == ("0.0.0.0", 7000, "info")
    redis = settings.load(
        RedisSettings, "OPENRL_INSPECT_REDIS_", {"OPENRL_INSPECT_REDIS_CLUSTER": "yes"}, {}
    )
    assert redis.cluster is True and redis.url == RedisSettings().url


def test_a_bad_setting_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export-schema"], {"OPENRL_INSPECT_LIMITS_MAX_PAGE_SIZE": "lots"})
    assert code == 2
    assert "OPENRL_INSPECT_LIMITS_MAX_PAGE_SIZE: expected a number" in capsys.readouterr().err


def test_log_label_keys_follow_the_kubernetes_label_settings() -> None:
    """GKE writes pod labels into log entries as ``k8s-pod/`` plus the key with dots as
    underscores; an explicit Cloud Logging setting still wins."""
    args = parser().parse_args(["serve", "--logging-project", "openrl-prod-1"])
    env = {"OPENRL_INSPECT_KUBERNETES_MODEL_LABEL": "example.com/model"}
    logs = backend_settings(args, env).cloud_logging
    assert logs is not None
    assert logs.model_label_key == "k8s-pod/example_com/model"
    assert logs.role_label_key == "k8s-pod/openrl_ai/role"
    env["OPENRL_INSPECT_CLOUD_LOGGING_MODEL_LABEL_KEY"] = "model"
    logs = backend_settings(args, env).cloud_logging
    assert logs is not None and logs.model_label_key == "model"
