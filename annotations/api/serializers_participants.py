"""Input and output serializers of the participation API (views_participants.py): participation links
and the participants they made. They describe and check shapes; annotations/services/participants.py
checks the values (parameter names, the completion URL's scheme, the design)."""

from rest_framework import serializers

from annotations.models import JoinLink, Participant
from annotations.selectors_crowd import answers_json, quality_json
from annotations.services.join_links import (
    COMPLETION_CODE_MAX,
    COMPLETION_URL_MAX,
    DEFAULT_PARAMS,
    IDLE_MINUTES_DEFAULT,
    IDLE_MINUTES_MAX,
    MAX_PARTICIPANTS,
    MAX_SKIPS,
)


class JoinLinkOpenInputSerializer(serializers.Serializer):
    completion_code = serializers.CharField(
        max_length=COMPLETION_CODE_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="Shown to each participant at the end. A code, a URL or both are required.",
    )
    completion_url = serializers.CharField(
        max_length=COMPLETION_URL_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="http(s) address participants are sent to at the end; `{code}` in it becomes the completion code.",
    )
    max_participants = serializers.IntegerField(
        min_value=1,
        max_value=MAX_PARTICIPANTS,
        required=False,
        allow_null=True,
        default=None,
        help_text="How many people the link admits; null: as many as the design takes.",
    )
    max_skips = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SKIPS,
        required=False,
        default=0,
        help_text="Non-practice items a participant may skip and still earn the code; 0: every item submitted.",
    )
    idle_minutes = serializers.IntegerField(
        min_value=0,
        max_value=IDLE_MINUTES_MAX,
        required=False,
        default=IDLE_MINUTES_DEFAULT,
        help_text="A slot held this long without activity is released to the next newcomer; 0: never.",
    )
    max_failed_checks = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SKIPS,
        required=False,
        default=0,
        help_text="Attention checks a participant may fail and still earn the completion code (docs/quality.md).",
    )
    failed_code = serializers.CharField(
        max_length=COMPLETION_CODE_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="The platform's failed-attention code, shown instead of the completion code to who failed.",
    )
    failed_url = serializers.CharField(
        max_length=COMPLETION_URL_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="http(s) address those who failed are sent to; `{code}` in it becomes the failed code.",
    )
    params = serializers.DictField(
        child=serializers.CharField(max_length=64, allow_blank=True),
        required=False,
        help_text=f"Query parameter names by what they carry (participant, study, session); default {DEFAULT_PARAMS}. "
        "An empty study or session name is not read.",
    )


class JoinLinkOutputSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="The link's address.")
    platform_url = serializers.SerializerMethodField(
        help_text="The address with the ids as Prolific fills them in ({{%PROLIFIC_PID%}} ...)."
    )
    is_open = serializers.BooleanField(read_only=True)
    participant_count = serializers.IntegerField(read_only=True, help_text="People who joined through it.")

    class Meta:
        model = JoinLink
        fields = [
            "id",
            "project",
            "token",
            "url",
            "platform_url",
            "is_open",
            "created",
            "revoked_at",
            "max_participants",
            "max_skips",
            "idle_minutes",
            "completion_code",
            "completion_url",
            "max_failed_checks",
            "failed_code",
            "failed_url",
            "params",
            "participant_count",
        ]

    def get_url(self, link: JoinLink) -> str:
        return self.context["request"].build_absolute_uri(link.path())

    def get_platform_url(self, link: JoinLink) -> str:
        return self.get_url(link) + link.platform_query()


class ParticipantOutputSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", help_text="The participant's editlab account.")
    assigned = serializers.IntegerField(read_only=True)
    submitted = serializers.IntegerField(read_only=True)
    skipped = serializers.IntegerField(read_only=True)
    quality = serializers.SerializerMethodField(
        help_text="The quality summary (docs/quality.md): attention checks, flagged edits, agreement, verdict."
    )
    answers = serializers.SerializerMethodField(
        help_text='Consent ("agreed", "declined" or null) and the pre/post answers by question id.'
    )

    class Meta:
        model = Participant
        fields = [
            "id",
            "username",
            "platform_id",
            "study_id",
            "session_id",
            "slot",
            "join_link",
            "joined_at",
            "completed_at",
            "outcome",
            "released_at",
            "assigned",
            "submitted",
            "skipped",
            "quality",
            "answers",
        ]

    def get_quality(self, participant: Participant) -> dict | None:
        summary = self.context.get("quality", {}).get(participant.pk)
        return quality_json(summary) if summary is not None else None

    def get_answers(self, participant: Participant) -> dict:
        return answers_json(self.context.get("answers", {}).get(participant.user_id, {}))
