"""The redis-py client every long-running process uses."""

import redis

from schemas.settings import Settings


def connect(settings: Settings, timeout: float | None = 5.0) -> "redis.Redis":
    return redis.Redis.from_url(settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)


def is_up(settings: Settings) -> bool:
    try:
        return bool(connect(settings, timeout=0.5).ping())
    except (redis.RedisError, OSError):
        return False
