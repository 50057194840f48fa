"""Canonical model of the text gateway: requests, parts, responses, usage and stream events.

No I/O and no web framework here; protocol codecs (``modelport.protocols.*``) convert to and from it.
"""

from modelport.core.accumulate import StreamAccumulator, events_from_response
from modelport.core.codec import ProtocolCodec, StreamDecoder, StreamEncoder, UsageSniffer
from modelport.core.events import (
    Finish,
    PartEnd,
    ReasoningDelta,
    RefusalDelta,
    ResponseStart,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageUpdate,
)
from modelport.core.messages import (
    CanonicalRequest,
    Message,
    ReasoningConfig,
    ResponseFormat,
    Role,
    ToolChoice,
    ToolSpec,
)
from modelport.core.parts import (
    AudioPart,
    FilePart,
    ImagePart,
    InputPart,
    OpaquePart,
    OutputPart,
    Part,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.core.response import CanonicalResponse, StopReason
from modelport.core.sse import SSEEvent, SSEParser, format_sse, parse_sse
from modelport.core.usage import Usage

__all__ = [
    "AudioPart",
    "CanonicalRequest",
    "CanonicalResponse",
    "FilePart",
    "Finish",
    "ImagePart",
    "InputPart",
    "Message",
    "OpaquePart",
    "OutputPart",
    "Part",
    "PartEnd",
    "ProtocolCodec",
    "ReasoningConfig",
    "ReasoningDelta",
    "ReasoningPart",
    "RefusalDelta",
    "RefusalPart",
    "ResponseFormat",
    "ResponseStart",
    "Role",
    "SSEEvent",
    "SSEParser",
    "StopReason",
    "StreamAccumulator",
    "StreamDecoder",
    "StreamEncoder",
    "StreamError",
    "StreamEvent",
    "TextDelta",
    "TextPart",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolCallStart",
    "ToolChoice",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "UsageSniffer",
    "UsageUpdate",
    "events_from_response",
    "format_sse",
    "parse_sse",
]
