"""Input and output serializers of the items API (views_items.py): a project's items, listed and
added in bulk. They only describe and check shapes; the services do the work."""

from rest_framework import serializers

from annotations.models import Item
from editlab import limits

MAX_ITEMS_PER_REQUEST = 5000


class ItemOutputSerializer(serializers.ModelSerializer):
    batch = serializers.CharField(source="batch.name", default=None, allow_null=True, read_only=True)
    effective_instruction = serializers.CharField(read_only=True)

    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "source",
            "model_output",
            "instruction",
            "drawn_instruction",
            "effective_instruction",
            "references",
            "gold_edits",
            "task_type",
            "meta",
            "position",
            "batch",
            "batch_position",
            "document",
            "document_position",
            "outputs",
            "highlights",
            "practice",
        ]


class StrictTextField(serializers.CharField):
    """Text, and only text: DRF's CharField turns 5 into "5", but an output that is a number is a mistake."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ItemInputSerializer(serializers.Serializer):
    external_id = serializers.CharField(max_length=255)
    model_output = serializers.CharField(trim_whitespace=False)
    # The serializer's metaclass moves declared fields into _declared_fields, so this field does not
    # hide Field.source at run time; the stubs see a class attribute replacing it.
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, allow_blank=True, default="", trim_whitespace=False
    )
    instruction = serializers.CharField(required=False, allow_blank=True, default="")
    references = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=list
    )
    gold_edits = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=list
    )
    task_type = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    meta = serializers.DictField(required=False, default=dict)
    document = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=255, help_text="Document id; segments share it."
    )
    document_position = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=0,
        max_value=limits.MAX_INT,
        help_text="The segment's place in its document (unique there); absent or null: after the document's last.",
    )
    outputs = serializers.DictField(
        child=StrictTextField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=dict,
        help_text='Outputs keyed by system, for conditions: {"sysA": "…", "sysB": "…"}.',
    )
    highlights = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField()),
        required=False,
        default=dict,
        help_text='Error spans per output, code points, end exclusive: {"sysA": [[0, 4, "minor"]]}.',
    )
    practice = serializers.BooleanField(required=False, default=False, help_text="Shown first; left out of analysis.")


class ItemBulkCreateInputSerializer(serializers.Serializer):
    # What many=True builds, spelled out: the stubs' Serializer() does not take a list's max_length.
    items: serializers.ListSerializer = serializers.ListSerializer(
        child=ItemInputSerializer(), allow_empty=False, max_length=MAX_ITEMS_PER_REQUEST
    )


class ItemBulkCreateOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField(help_text="New items.")
    skipped = serializers.IntegerField(help_text="Items already in the project with the same id and text.")
    items = ItemOutputSerializer(many=True)
