"""The JSON API's request schemas: the proto messages' fields as plain data, read once.

The HTTP API speaks the proto's own field names, types and enums, so a JSON body is checked
against the same definitions as a gRPC request (``convert.py`` walks these schemas; no protobuf
message is built on the HTTP path). Each schema is read from the generated descriptors at
import time, so a field added to the proto is accepted here without an edit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import FieldDescriptor

from tokend.v1 import tokenizer_pb2 as pb

# The scalar kinds a request field can have (bytes and floats: none in requests).
STRING, BOOL, ENUM, INT, OTHER, MESSAGE = "string", "bool", "enum", "int", "other", "message"

_INT_RANGES = {
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True)
class Enum:
    name: str
    values: tuple[tuple[str, int], ...]  # (NAME, number) in declaration order


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    repeated: bool
    message: Schema | None = None
    enum: Enum | None = None
    low: int = 0  # INT's range
    high: int = 0
    oneof: tuple[str, ...] = ()  # the other members of its oneof: setting it clears them


@dataclass(frozen=True)
class Schema:
    name: str
    fields: dict[str, Field] = field(default_factory=dict)

    @property
    def only_repeated(self) -> Field | None:
        """The one field of a message that has exactly one, repeated (``TokenIds.ids``)."""
        fields = list(self.fields.values())
        return fields[0] if len(fields) == 1 and fields[0].repeated else None


def schema_of(descriptor: Any) -> Schema:
    """The schema of a message descriptor (nested messages included)."""
    out = Schema(descriptor.name)
    for f in descriptor.fields:
        oneof = f.containing_oneof
        others = tuple(o.name for o in oneof.fields if o.name != f.name) if oneof else ()
        repeated = bool(f.is_repeated)
        if f.message_type is not None:
            out.fields[f.name] = Field(f.name, MESSAGE, repeated, schema_of(f.message_type),
                                       oneof=others)
        elif f.type == FieldDescriptor.TYPE_STRING:
            out.fields[f.name] = Field(f.name, STRING, repeated, oneof=others)
        elif f.type == FieldDescriptor.TYPE_BOOL:
            out.fields[f.name] = Field(f.name, BOOL, repeated, oneof=others)
        elif f.type == FieldDescriptor.TYPE_ENUM:
            enum = Enum(f.enum_type.name, tuple((v.name, v.number) for v in f.enum_type.values))
            out.fields[f.name] = Field(f.name, ENUM, repeated, enum=enum, oneof=others)
        elif f.type in _INT_RANGES:
            low, high = _INT_RANGES[f.type]
            out.fields[f.name] = Field(f.name, INT, repeated, low=low, high=high, oneof=others)
        else:
            out.fields[f.name] = Field(f.name, OTHER, repeated, oneof=others)
    return out


ENCODE = schema_of(pb.EncodeRequest.DESCRIPTOR)
DECODE = schema_of(pb.DecodeRequest.DESCRIPTOR)
COUNT = schema_of(pb.CountTokensRequest.DESCRIPTOR)
LINT = schema_of(pb.LintRequest.DESCRIPTOR)
DIFF = schema_of(pb.DiffRequest.DESCRIPTOR)
