"""``ArgumentValidator``: a tool's arguments coerced, validated and structured, as pi does it.

pi-ai (0.73.1) validates a tool call's arguments in three steps, and the validator does the same
so that a model sees the same error text and recovers the same way:

1. TypeBox's ``Value.Convert`` (only for schemas built with TypeBox; here: attrs classes, whose
   generated schema plays that role): ``_typebox_convert``.
2. pi's own JSON-schema coercion, for every schema: ``_coercion``.
3. Validation by the ``jsonschema`` library against the schema with its keywords in TypeBox's
   order (``_schema_walk``), errors rendered as pi renders them (``_error_text``).

Then an attrs class's arguments are structured into an instance with cattrs. Most calls arrive
already valid, so a precompiled check (``_fast_check``) first tries to prove that, and only the
calls it cannot prove go through the three steps. Everything that can be prepared is prepared
once per tool, in the constructor; JavaScript's value semantics are in ``_js``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Union

from .._errors import ToolArgumentError
from ._js import js_json_stringify, js_number_to_string
from ._schema import JsonSchema, json_schema_for

if TYPE_CHECKING:  # imported by _load(), when the first validator is built
    import cattrs
    from jsonschema import validators as _js_validators
    from jsonschema.exceptions import SchemaError
    from jsonschema.protocols import Validator

    from ._coercion import JsonSchemaCoercer
    from ._error_text import (
        format_validation_error,
        problems_from_errors,
        problems_from_structuring,
    )
    from ._fast_check import MISS, compile_fast_check
    from ._schema_walk import BranchChecks as _Checks
    from ._schema_walk import ordered_schema as _ordered_schema
    from ._typebox_convert import TypeBoxConverter

    _CONVERTER: cattrs.Converter

# ``_Checks`` and ``_ordered_schema`` are looked up in this module by the constructor only: a
# test replaces them here to prove that the per-call path never rebuilds anything.

__all__ = [
    "ArgumentValidator",
    "ToolArgumentError",
    "format_validation_error",
    "js_json_stringify",
    "js_number_to_string",
    "json_schema_for",
]

_LOADED = False
"""Whether :func:`_load` has run (the first :class:`ArgumentValidator` runs it)."""


def _load() -> None:
    """Import ``jsonschema``, ``cattrs`` and the modules built on them, into this module.

    Done once, by the first :class:`ArgumentValidator` (so by the first tool built), not by
    ``import pi_trio``: together they are ~6.7 MB of heap and ~120 modules that a process
    whose agents have no tools never needs. Every name the per-call path uses is a module
    global set here, so a call costs what it cost with the imports at the top of the module
    (an instance exists only once this has run). Two threads building the first validators
    at once both run it: the imports are serialised by the import system and the names bound
    are the same modules and functions (only ``_CONVERTER`` is built twice, identically).
    """
    global _LOADED, _CONVERTER, cattrs, _js_validators, SchemaError, Validator
    global JsonSchemaCoercer, format_validation_error, problems_from_errors
    global problems_from_structuring, MISS, compile_fast_check, _Checks, _ordered_schema
    global TypeBoxConverter
    import cattrs
    from cattrs.strategies import configure_union_passthrough
    from jsonschema import validators as _js_validators
    from jsonschema.exceptions import SchemaError
    from jsonschema.protocols import Validator

    from ._coercion import JsonSchemaCoercer
    from ._error_text import (
        format_validation_error,
        problems_from_errors,
        problems_from_structuring,
    )
    from ._fast_check import MISS, compile_fast_check
    from ._schema_walk import BranchChecks as _Checks
    from ._schema_walk import ordered_schema as _ordered_schema
    from ._typebox_convert import TypeBoxConverter

    converter = cattrs.Converter()
    configure_union_passthrough(Union[str, bool, int, float, None], converter)  # noqa: UP007
    _CONVERTER = converter
    _LOADED = True


def __getattr__(name: str) -> Any:
    """The names :func:`_load` binds, for a caller that reads one before any validator
    exists (``from pi_trio.tools._validation import format_validation_error``)."""
    if name in _LAZY_NAMES and not _LOADED:
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LAZY_NAMES = frozenset(
    {
        "_CONVERTER",
        "cattrs",
        "_js_validators",
        "SchemaError",
        "Validator",
        "JsonSchemaCoercer",
        "format_validation_error",
        "problems_from_errors",
        "problems_from_structuring",
        "MISS",
        "compile_fast_check",
        "_Checks",
        "_ordered_schema",
        "TypeBoxConverter",
    }
)


class ArgumentValidator:
    """Coerces and validates one tool's arguments; build it once per tool, call it per call.

    Everything that can be prepared is prepared in the constructor: the keyword-ordered schema,
    the compiled ``jsonschema`` validator, one compiled validator per union branch, and the fast
    check (``_fast_check``) that accepts already-valid arguments without the coercers and
    ``jsonschema``. The per-call path only walks the arguments.
    """

    __slots__ = (
        "_checks",
        "_coercer",
        "_converter",
        "_fast",
        "_schema",
        "_structure",
        "_validator",
        "_validator_schema",
        "params_type",
    )

    def __init__(
        self,
        schema: Mapping[str, Any],
        *,
        structure: Callable[[Any], Any] | None = None,
        typebox_convert: bool = False,
        coerce_json_strings: bool = True,
        params_type: type | None = None,
    ) -> None:
        """Compile ``schema`` (and everything the per-call path needs).

        Args:
            schema: the parameters' JSON schema; draft 2020-12 unless its ``$schema`` says
                otherwise. It is copied; the copy is what :attr:`schema` returns.
            structure: turns the validated dict into the value :meth:`validate` returns
                (default: the dict itself).
            typebox_convert: run TypeBox's ``Value.Convert`` first, as pi does for
                TypeBox-built schemas (pi_trio does it for attrs classes).
            coerce_json_strings: parse a JSON string where an array or object is expected.
            params_type: the attrs class ``structure`` builds, kept as :attr:`params_type`.

        Raises:
            ValueError: the schema itself is invalid (the text names the offending part).
        """
        if not _LOADED:
            _load()
        self._schema: JsonSchema = dict(schema)
        ordered = _ordered_schema(self._schema)
        validator_cls = _js_validators.validator_for(
            ordered, default=_js_validators.Draft202012Validator
        )
        try:
            validator_cls.check_schema(ordered)
        except SchemaError as exc:
            raise ValueError(f"invalid tool parameters schema: {exc.message}") from exc
        self._validator: Validator = validator_cls(
            ordered, format_checker=validator_cls.FORMAT_CHECKER
        )
        self._checks = _Checks(self._validator, ordered)
        self._coercer = JsonSchemaCoercer(self._checks, coerce_json_strings)
        self._converter = (
            TypeBoxConverter(self._checks, coerce_json_strings) if typebox_convert else None
        )
        self._structure = structure
        #: The attrs class the arguments are structured into, if any.
        self.params_type = params_type
        self._validator_schema = ordered
        self._fast = (
            compile_fast_check(ordered)
            if validator_cls is _js_validators.Draft202012Validator
            else None
        )

    @property
    def schema(self) -> JsonSchema:
        """The parameters' JSON schema, as providers should see it (shared: do not mutate)."""
        return self._schema

    @classmethod
    def for_parameters(
        cls, parameters: type | Mapping[str, Any], *, coerce_json_strings: bool = True
    ) -> ArgumentValidator:
        """Validator for an attrs class (cached per class) or a JSON-schema dict.

        Args:
            parameters: an attrs class (arguments are structured into an instance of it) or a
                JSON-schema dict (arguments stay a dict).
            coerce_json_strings: parse a JSON string where an array or object is expected.

        Raises:
            TypeError: ``parameters`` is neither, or the attrs class has a field type that
                JSON cannot express.
            ValueError: the JSON-schema dict is not a valid schema.
        """
        if isinstance(parameters, type):
            return _validator_for_class(parameters, coerce_json_strings)
        if isinstance(parameters, Mapping):
            return cls(parameters, coerce_json_strings=coerce_json_strings)
        raise TypeError(f"tool parameters must be an attrs class or a dict, got {parameters!r}")

    def coerce(self, arguments: Any) -> Any:
        """pi's coercions only, without validating: what the validator would check.

        Args:
            arguments: the raw arguments; left untouched (changed containers are copies).
        """
        value = arguments
        if self._converter is not None:
            value = self._converter.convert(value, self._validator_schema)
        return self._coercer.coerce(value, self._validator_schema)

    def validate(self, tool_name: str, arguments: Any) -> Any:
        """Coerce, validate and structure ``arguments``.

        Args:
            tool_name: the tool's name, for the error text.
            arguments: the raw arguments, as the model sent them; left untouched.

        Returns:
            The attrs instance for an attrs class, else the coerced dict (a new dict).

        Raises:
            ToolArgumentError: the arguments are invalid; its text is pi's, showing
                ``arguments`` as received (before coercion), and ``problems`` lists each
                ``path: message``.
        """
        fast = self._fast
        if fast is not None:
            value = fast(arguments)
            if value is not MISS:
                if self._structure is None:
                    return value
                return self._structured(tool_name, value, arguments)
        return self._validate_fully(tool_name, arguments)

    def _validate_fully(self, tool_name: str, arguments: Any) -> Any:
        """The full path: coerce, validate with ``jsonschema``, structure."""
        value = self.coerce(arguments)
        errors = self._validator.iter_errors(value)
        first = next(errors, None)
        if first is not None:
            problems = problems_from_errors([first, *errors])
            raise ToolArgumentError(
                format_validation_error(tool_name, problems, arguments),
                tool_name=tool_name,
                problems=problems,
            )
        if self._structure is None:
            return value
        return self._structured(tool_name, value, arguments)

    def _structured(self, tool_name: str, value: Any, arguments: Any) -> Any:
        """``value`` (valid) structured; a failure is reported with ``arguments`` as received."""
        assert self._structure is not None
        try:
            return self._structure(value)
        except (cattrs.BaseValidationError, ValueError, TypeError) as exc:
            problems = problems_from_structuring(exc)
            raise ToolArgumentError(
                format_validation_error(tool_name, problems, arguments),
                tool_name=tool_name,
                problems=problems,
            ) from exc


@functools.cache
def _validator_for_class(params_type: type, coerce_json_strings: bool) -> ArgumentValidator:
    schema = json_schema_for(params_type)

    def structure(value: Any) -> Any:
        return _CONVERTER.structure(value, params_type)

    return ArgumentValidator(
        schema,
        structure=structure,
        typebox_convert=True,
        coerce_json_strings=coerce_json_strings,
        params_type=params_type,
    )
