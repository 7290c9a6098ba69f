from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from editlab import views
from editlab.logins.forms import LimitedAdminAuthenticationForm

admin.site.login_form = LimitedAdminAuthenticationForm

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", views.admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="api-schema", template_name="api_docs.html")),
        name="api-docs",
    ),
    path("api/", include("annotations.api.urls")),
    path("api/", include("metrics.api.urls")),
    path("", include("annotations.urls")),
    path("", include("metrics.urls")),
    path("api/", include("generation.api.urls")),
    path("", include("generation.urls")),
]

# A 400 that names the limit the request broke (editlab/errors.py).
handler400 = "editlab.errors.bad_request"
# Pages refused with the message the code gave and the way back; under /api/, a URL without an
# endpoint answers in the API's error shape too.
handler403 = "editlab.errors.permission_denied"
handler404 = "editlab.errors.not_found"
# A 500 page that quotes the request id of the logged traceback.
handler500 = "editlab.views.server_error"
