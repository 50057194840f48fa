"""Typed field access for request decoders: each helper names the offending field in its 400.

`param` is the dotted path of the field as the client wrote it (``messages[2].content[0].text``).
JSON ``null`` counts as absent for the optional getters, as in the OpenAI and Anthropic APIs.
"""

from __future__ import annotations

from typing import Any

from modelport.errors import InvalidParameters, MissingParameter


def _type_error(param: str, expected: str) -> InvalidParameters:
    return InvalidParameters(f"Invalid type for '{param}': expected {expected}.", param=param)


def as_object(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _type_error(param, "an object")
    return value


def as_list(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise _type_error(param, "an array")
    return value


def as_str(value: Any, param: str) -> str:
    if not isinstance(value, str):
        raise _type_error(param, "a string")
    return value


def require(obj: dict[str, Any], key: str, param: str) -> Any:
    value = obj.get(key)
    if value is None:
        raise MissingParameter(f"Missing required parameter: '{param}'.", param=param)
    return value


def require_str(obj: dict[str, Any], key: str, param: str, *, non_empty: bool = False) -> str:
    value = as_str(require(obj, key, param), param)
    if non_empty and not value:
        raise InvalidParameters(f"'{param}' must not be empty.", param=param)
    return value


def opt_str(obj: dict[str, Any], key: str, param: str) -> str | None:
    value = obj.get(key)
    return None if value is None else as_str(value, param)


def opt_bool(obj: dict[str, Any], key: str, param: str) -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _type_error(param, "a boolean")
    return value


def opt_int(
    obj: dict[str, Any], key: str, param: str, *, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(param, "an integer")
    _check_range(value, param, minimum, maximum)
    return value


def opt_number(
    obj: dict[str, Any], key: str, param: str, *, minimum: float | None = None, maximum: float | None = None
) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(param, "a number")
    _check_range(value, param, minimum, maximum)
    return value


def opt_object(obj: dict[str, Any], key: str, param: str) -> dict[str, Any] | None:
    value = obj.get(key)
    return None if value is None else as_object(value, param)


def opt_list(obj: dict[str, Any], key: str, param: str) -> list[Any] | None:
    value = obj.get(key)
    return None if value is None else as_list(value, param)


def _check_range(value: float, param: str, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise InvalidParameters(f"Invalid '{param}': {value} is below the minimum value of {minimum}.", param=param)
    if maximum is not None and value > maximum:
        raise InvalidParameters(f"Invalid '{param}': {value} is above the maximum value of {maximum}.", param=param)


def reject_foreign_fields(body: dict[str, Any], fields: dict[str, str], uses: str) -> None:
    """400 naming the first field of another protocol in `body` (`fields`: field → that protocol's name)."""
    if body.keys().isdisjoint(fields):
        return  # the usual case, in one set operation
    for key, protocol in fields.items():
        if key in body:
            raise InvalidParameters(
                f"Unrecognized request argument supplied: '{key}' (a {protocol} API field; {uses}).", param=key
            )
