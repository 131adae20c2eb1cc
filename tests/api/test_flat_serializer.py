"""FlatSerializer (api/serializers.py) copies its declared fields shallowly, for speed: a
field's mutable default must still be a request's own, as DRF's deep copy made it."""

from __future__ import annotations

from api.serializers import RecallInputSerializer
from memoryhub.selectors.recall import DEFAULT_SOURCES


def test_a_requests_change_to_a_default_list_does_not_reach_the_next_request() -> None:
    first = RecallInputSerializer(data={"query": "tea"})
    assert first.is_valid(), first.errors
    first.validated_data["sources"].append("messages")  # what any later code might do

    second = RecallInputSerializer(data={"query": "tea"})
    assert second.is_valid(), second.errors
    assert second.validated_data["sources"] == list(DEFAULT_SOURCES)
    assert second.validated_data["sources"] is not first.validated_data["sources"]


def test_the_fields_are_the_instances_own_and_validate_as_declared() -> None:
    one, other = RecallInputSerializer(), RecallInputSerializer()
    assert one.fields["sources"] is not other.fields["sources"]
    assert one.fields["sources"].parent is one and other.fields["sources"].parent is other
    invalid = RecallInputSerializer(data={"query": "tea", "sources": ["nothing"]})
    assert not invalid.is_valid() and "sources" in invalid.errors
