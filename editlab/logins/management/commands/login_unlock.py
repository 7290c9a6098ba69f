from django.core.management.base import BaseCommand, CommandParser

from editlab.logins.services import login_counters_reset, normalize_username


class Command(BaseCommand):
    help = "Unlock a username the login limiter refuses: its failed-attempt counts go back to zero."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="as typed at the login (any case or width)")
        parser.add_argument("--address", help="only this client address (and the username's ceiling)")

    def handle(self, *args, username: str, address: str | None, **options) -> None:
        count = login_counters_reset(username=username, address=address)
        where = f" from {address}" if address else ""
        self.stdout.write(f"{normalize_username(username)}{where}: {count} counter(s) unlocked.")
