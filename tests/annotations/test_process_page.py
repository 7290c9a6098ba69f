"""The replay page's process graph, measures and S-notation (annotations/process; docs/process.md)."""

import base64
import re
import xml.etree.ElementTree as ET

import pytest

from annotations.process import trace_log
from annotations.process.graph import graph_points, process_graph_svg
from tests.annotations.editing_helpers import ORIGINAL, edit_log, wire
from tests.annotations.test_process import Log
from tests.annotations.test_replay_page import page_url, submitted

pytestmark = pytest.mark.django_db


def test_the_graph_follows_production_text_and_cursor():
    log = Log("ab").type("cd", gap=1000).backspace(gap=500).type("X", at=0, gap=250)
    points = graph_points(trace_log("ab", log.events()))
    assert points.seconds == [0.0, 1.0, 1.5, 1.75]  # from the first action
    assert points.produced == [3, 4, 4, 5]
    assert points.text == [3, 4, 3, 4]
    assert points.cursor == [3, 4, 3, 1]


def test_the_graph_is_a_standalone_svg_document_without_the_logs_text():
    log = Log("<secret>").type("&<", gap=300)
    svg = process_graph_svg(trace_log("<secret>", log.events()))
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall("{http://www.w3.org/2000/svg}polyline")) == 3
    assert "secret" not in svg


def test_the_replay_page_shows_the_process_graph_and_s_notation(annotator, admin_client):
    post_edit = submitted(annotator)
    response = admin_client.get(page_url(post_edit))
    assert response.status_code == 200
    body = response.content.decode()
    assert '<figure id="process-graph"><svg xmlns="http://www.w3.org/2000/svg"' in body
    link = re.search(r'download="process-graph-\d+.svg" href="data:image/svg\+xml;base64,([^"]+)"', body)
    svg = base64.b64decode(link.group(1)).decode()
    assert svg == process_graph_svg(trace_log(ORIGINAL, wire(edit_log())))
    assert '<pre class="text" id="s-notation">' in body and "<dt>revisions</dt>" in body
