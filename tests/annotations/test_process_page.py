"""The replay page's process graph, measures and S-notation (annotations/process; docs/process.md)."""

import base64
import io
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse
from PIL import Image

from annotations.process import trace_log
from annotations.process.graph import graph_points, process_graph_svg
from annotations.process.graph_png import process_graph_figure, process_graph_png
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


def test_the_graph_as_png_draws_the_same_series_as_the_svg():
    log = Log("ab").type("cd", gap=1000).backspace(gap=500).type("X", at=0, gap=250)
    trace = trace_log("ab", log.events())
    figure = process_graph_figure(trace)
    lines = figure.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["produced", "text", "cursor"]
    assert [list(line.get_xdata()) for line in lines] == [[0.0, 1.0, 1.5, 1.75]] * 3
    assert [list(line.get_ydata()) for line in lines] == [[3, 4, 4, 5], [3, 4, 3, 4], [3, 4, 3, 1]]
    image = Image.open(io.BytesIO(process_graph_png(trace)))
    assert (image.format, image.size) == ("PNG", (720, 300))


def test_the_replay_page_links_the_png_and_it_downloads(annotator, admin_client, researcher_client, client):
    post_edit = submitted(annotator)
    url = reverse("manage-post-edit-process-graph", args=[post_edit.pk])
    body = admin_client.get(page_url(post_edit)).content.decode()
    assert f'<a id="process-graph-png" download="process-graph-{post_edit.pk}.png" href="{url}">' in body
    response = researcher_client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == f'attachment; filename="process-graph-{post_edit.pk}.png"'
    assert response.content == process_graph_png(trace_log(ORIGINAL, wire(edit_log())))
    assert Image.open(io.BytesIO(response.content)).size == (720, 300)
    client.force_login(annotator)  # an annotator: not even their own log's graph
    assert client.get(url).status_code == 404
    assert admin_client.get(reverse("manage-post-edit-process-graph", args=[2**62])).status_code == 404
