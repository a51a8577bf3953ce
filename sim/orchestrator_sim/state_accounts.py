"""Accounts, repositories and permission levels of the emulated GitHub."""

from __future__ import annotations

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import BOT_SUFFIX, PERMISSION_LEVELS, Repo, User, make_node_id
from orchestrator_sim.state_core import StateCore


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
        """Create an account; a token may belong to one account only.

        A login ending in ``[bot]`` makes a bot account named without the suffix,
        as GitHub names them (REST shows ``name[bot]``, GraphQL ``name``).
        """
        if login.endswith(BOT_SUFFIX) and not organization:
            login, bot = login[: -len(BOT_SUFFIX)], True
        if not login or "/" in login or login.strip() != login or "[" in login:
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
        """The account with this login (case-insensitive); a bot answers to both spellings."""
        with self.lock:
            found = self.users.get(login.lower())
            if found is None and login.endswith(BOT_SUFFIX):
                bare = self.users.get(login[: -len(BOT_SUFFIX)].lower())
                found = bare if bare is not None and bare.bot else None
            return found

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

    def set_team(self, org: str, slug: str, members: list[str] | None) -> list[str]:
        """Make team ``org/slug`` exactly ``members`` (None removes it); returns the logins."""
        if not slug or "/" in slug or slug.strip() != slug:
            raise Unprocessable.field("Team", "slug", message=f"invalid team slug {slug!r}")
        with self.lock:
            account = self.user(org)
            if not account.organization:
                raise Unprocessable.field("Team", "org", message=f"{org} is not an organization")
            if members is None:
                account.teams.pop(slug.lower(), None)
                self._touch()
                return []
            logins = [self.user(login).login for login in members]
            account.teams[slug.lower()] = logins
            self._touch()
            return logins

    def team_members(self, team: str) -> list[str] | None:
        """The members of team ``org/slug`` (logins), None when there is no such team."""
        org, _, slug = team.partition("/")
        with self.lock:
            account = self.find_user(org)
            if account is None or not account.organization:
                return None
            return account.teams.get(slug.lower())

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
            explicit = repo.permissions.get(self.login_key(login))
            if explicit is not None:
                return explicit
            return None if repo.private else "read"

    def login_key(self, login: str) -> str:
        """The key an account is filed under (its bare login, lower case), for any spelling."""
        found = self.find_user(login)
        return (found.login if found is not None else login).lower()

    def is_collaborator(self, repo: Repo, login: str) -> bool:
        """Whether ``login`` was given a level on ``repo`` (the owner of a user's repo is one)."""
        with self.lock:
            return self.login_key(login) in repo.permissions

    def has_permission(self, repo: Repo, login: str | None, needed: str) -> bool:
        """Whether ``login`` holds at least the ``needed`` level on ``repo``."""
        level = self.permission(repo, login)
        if level is None:
            return False
        return PERMISSION_LEVELS.index(level) >= PERMISSION_LEVELS.index(needed)
