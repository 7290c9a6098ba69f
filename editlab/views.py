from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """A landing page whose links depend on the user's role (templates/home.html)."""
    return render(request, "home.html")
