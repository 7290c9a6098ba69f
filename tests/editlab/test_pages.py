import re

from django.contrib.staticfiles import finders


def test_the_base_stylesheet_is_found():
    assert finders.find("editlab/base.css")


def test_the_api_docs_page_loads_nothing_from_a_cdn(researcher_client):
    response = researcher_client.get("/api/docs/")
    assert response.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', response.content.decode())
    assert sources, "the docs page references its assets"
    assert all(not source.startswith(("http://", "https://", "//")) for source in sources), sources
