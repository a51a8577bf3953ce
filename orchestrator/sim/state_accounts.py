"""Accounts, repositories and permission levels of the emulated GitHub."""

from __future__ import annotations

from orchestrator.sim.errors import NotFound, Unprocessable
from orchestrator.sim.records import PERMISSION_LEVELS, Repo, User, make_node_id
from orchestrator.sim.state_core import StateCore


class AccountsState(StateCore):
    """Accounts (people, bots, organizations) and repositories with their permission levels."""

    # --------------------------------------------------------------- accounts

    def add_user(
        self,
        login: str,
        *,
        token: str | None = None,
        bot: bool = False,
        organization: bool = False,
        name: str | None = None,
        email: str | None = None,
    ) -> User:
        """Create an account; a token may belong to one account only."""
        if not login or "/" in login or login.strip() != login:
            raise Unprocessable.field("User", "login", message=f"invalid login {login!r}")
        with self.lock:
            key = login.lower()
            if key in self.users:
                raise Unprocessable.field("User", "login", "already_exists", f"{login} exists")
            if token is not None and token in self._tokens:
                raise Unprocessable.field("User", "token", "already_exists", "token is in use")
            ident = self.new_id()
            kind = "Organization" if organization else ("Bot" if bot else "User")
            user = User(
                id=ident,
                login=login,
                node_id=make_node_id(kind, ident),
                token=token,
                bot=bot,
                organization=organization,
                name=name,
                email=email,
                created_at=self.now(),
            )
            self.users[key] = user
            if token is not None:
                self._tokens[token] = key
            self._touch()
            return user

    def find_user(self, login: str) -> User | None:
        with self.lock:
            return self.users.get(login.lower())

    def user(self, login: str) -> User:
        """The account with this login (case-insensitive); NotFound otherwise."""
        found = self.find_user(login)
        if found is None:
            raise NotFound(f"user {login}")
        return found

    def user_for_token(self, token: str) -> User | None:
        """The account a token authenticates, or None for an unknown token."""
        with self.lock:
            key = self._tokens.get(token)
            return self.users.get(key) if key is not None else None

    # ------------------------------------------------------------------ repos

    def add_repo(
        self,
        owner: str,
        name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        description: str | None = None,
        require_review: bool = True,
    ) -> Repo:
        """Create a repository; the owner account is created (as an organization) if missing."""
        if not name or "/" in name or name.strip() != name:
            raise Unprocessable.field("Repository", "name", message=f"invalid name {name!r}")
        with self.lock:
            account = self.find_user(owner) or self.add_user(owner, organization=True)
            key = f"{account.login}/{name}".lower()
            if key in self.repos:
                raise Unprocessable.field("Repository", "name", "already_exists", f"{key} exists")
            ident = self.new_id()
            now = self.now()
            repo = Repo(
                id=ident,
                node_id=make_node_id("Repository", ident),
                owner=account.login,
                name=name,
                created_at=now,
                updated_at=now,
                pushed_at=now,
                description=description,
                private=private,
                default_branch=default_branch,
                require_review=require_review,
            )
            if not account.organization:
                repo.permissions[account.login.lower()] = "admin"
            self.repos[key] = repo
            self._touch()
            return repo

    def find_repo(self, owner: str, name: str) -> Repo | None:
        with self.lock:
            return self.repos.get(f"{owner}/{name}".lower())

    def repo(self, owner: str, name: str) -> Repo:
        """The repository ``owner/name`` (case-insensitive); NotFound otherwise."""
        found = self.find_repo(owner, name)
        if found is None:
            raise NotFound(f"repository {owner}/{name}")
        return found

    def set_permission(self, repo: Repo, login: str, level: str | None) -> None:
        """Give ``login`` a permission level on ``repo`` (None removes it)."""
        if level is not None and level not in PERMISSION_LEVELS:
            raise Unprocessable.field(
                "Permission", "permission", message=f"level must be one of {PERMISSION_LEVELS}"
            )
        with self.lock:
            account = self.user(login)
            if level is None:
                repo.permissions.pop(account.login.lower(), None)
            else:
                repo.permissions[account.login.lower()] = level
            self._touch()

    def permission(self, repo: Repo, login: str | None) -> str | None:
        """The effective level of ``login`` on ``repo``: explicit, else read on public repos."""
        with self.lock:
            if login is None:
                return None if repo.private else "read"
            explicit = repo.permissions.get(login.lower())
            if explicit is not None:
                return explicit
            return None if repo.private else "read"

    def has_permission(self, repo: Repo, login: str | None, needed: str) -> bool:
        """Whether ``login`` holds at least the ``needed`` level on ``repo``."""
        level = self.permission(repo, login)
        if level is None:
            return False
        return PERMISSION_LEVELS.index(level) >= PERMISSION_LEVELS.index(needed)
