import { useEffect, useState } from "preact/hooks";
import { Session, dashboard } from "./api";
import { ErrorText, message } from "./ui";

// The team (admins only) and the signed-in user's own password: calls to
// core-api's session routes, not the public APIs.

interface TeamUser {
  id: string;
  email: string;
  role: string;
  /** Only the accounts the signed-in admin holds too. */
  merchant_account_ids: string[];
  /** Whether the signed-in admin may edit, reset or remove the user. */
  manageable: boolean;
  locked_until: string | null;
  must_change_password: boolean;
}

/** A generated password, shown once: a new user's or a reset one's. */
interface Shown {
  email: string;
  password: string;
  reset: boolean;
}

const roles = ["viewer", "developer", "admin"];

/** Role and merchant account fields, shared by the add and edit forms. */
function UserFields({ prefix, role, setRole, chosen, setChosen, choices }: {
  prefix: string;
  role: string;
  setRole: (r: string) => void;
  chosen: string[];
  setChosen: (a: string[]) => void;
  choices: string[];
}) {
  const toggle = (a: string, on: boolean) => {
    if (a === "*") return setChosen(on ? ["*"] : []);
    setChosen(on ? [...chosen.filter((x) => x !== "*"), a] : chosen.filter((x) => x !== a));
  };
  return (
    <>
      <div class="field">
        <label for={`${prefix}-role`}>Role</label>
        <select id={`${prefix}-role`} value={role} onChange={(e) => setRole((e.target as HTMLSelectElement).value)}>
          {roles.map((r) => <option key={r} value={r}>{r}</option>)}
        </select>
      </div>
      <fieldset class="toggle">
        <legend>Merchant accounts</legend>
        {choices.map((a) => (
          <label key={a}>
            <input type="checkbox" name={`${prefix}-account`} value={a} checked={chosen.includes(a)}
              onChange={(e) => toggle(a, (e.target as HTMLInputElement).checked)} />
            {" "}{a === "*" ? "every account (*)" : a}
          </label>
        ))}
      </fieldset>
    </>
  );
}

function Member({ user, me, choices, reload, say, show }: {
  user: TeamUser;
  me: Session;
  choices: string[];
  reload: () => Promise<void>;
  say: (note: string, error: string) => void;
  show: (s: Shown) => void;
}) {
  const [editing, setEditing] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [resetting, setResetting] = useState(false);
  const [role, setRole] = useState(user.role);
  const [chosen, setChosen] = useState(user.merchant_account_ids);
  const manageable = user.manageable;
  const self = user.id === me.user.id;
  const locked = user.locked_until && Date.parse(user.locked_until) > Date.now();

  async function run(done: string, method: string, path: string, body?: unknown) {
    say("", "");
    try {
      await dashboard(method, path, body);
      await reload();
      say(done, "");
      setEditing(false);
      setConfirming(false);
    } catch (e) {
      say("", message(e));
    }
  }
  async function reset() {
    say("", "");
    try {
      const u = await dashboard("POST", `/dashboard/users/${user.id}/password-reset`);
      await reload();
      show({ email: u.email, password: u.password, reset: true });
    } catch (e) {
      say("", message(e));
    }
  }
  const save = (ev: Event) => {
    ev.preventDefault();
    run(`${user.email} changed.`, "PUT", `/dashboard/users/${user.id}`, { role, merchant_account_ids: chosen });
  };
  return (
    <li>
      <strong>{user.email}</strong>{self && " (you)"} · {user.role} · {user.merchant_account_ids.join(", ")}
      {locked && <span class="error"> · locked until {new Date(user.locked_until!).toISOString().slice(0, 16).replace("T", " ")} UTC</span>}
      {user.must_change_password && " · must change their password"}
      {!manageable && <p>Also in merchant accounts you do not administer: another admin manages this user.</p>}
      {manageable && !editing && (
        <div class="row-actions">
          <button type="button" onClick={() => setEditing(true)}>Edit {user.email}</button>
          {locked && (
            <button type="button" onClick={() => run(`${user.email} unlocked.`, "POST", `/dashboard/users/${user.id}/unlock`)}>
              Unlock {user.email}
            </button>
          )}
          {!self && !resetting && (
            <button type="button" onClick={() => setResetting(true)}>Reset password of {user.email}</button>
          )}
          {!self && resetting && (
            <>
              <button type="button" onClick={() => { setResetting(false); reset(); }}>
                Confirm password reset of {user.email} (signs them out)
              </button>
              <button type="button" onClick={() => setResetting(false)}>Keep the password of {user.email}</button>
            </>
          )}
          {!self && !confirming && <button type="button" onClick={() => setConfirming(true)}>Remove {user.email}</button>}
          {!self && confirming && (
            <>
              <button type="button" onClick={() => run(`${user.email} removed.`, "DELETE", `/dashboard/users/${user.id}`)}>
                Confirm removal of {user.email}
              </button>
              <button type="button" onClick={() => setConfirming(false)}>Keep {user.email}</button>
            </>
          )}
        </div>
      )}
      {editing && (
        <form class="editor" onSubmit={save} aria-label={`Edit ${user.email}`}>
          <UserFields prefix={`edit-${user.id}`} role={role} setRole={setRole} chosen={chosen} setChosen={setChosen} choices={choices} />
          <div class="buttons">
            <button type="submit">Save</button>
            <button type="button" onClick={() => setEditing(false)}>Cancel</button>
          </div>
        </form>
      )}
    </li>
  );
}

/** The team page: the users of the admin's merchant accounts. */
export function Team({ session, accounts }: { session: Session; accounts: string[] }) {
  const [users, setUsers] = useState<TeamUser[] | null>(null);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [created, setCreated] = useState<Shown | null>(null);
  const [email, setEmail] = useState("");
  const [role, setRole] = useState("viewer");
  const [chosen, setChosen] = useState<string[]>([]);
  const mine = session.user.merchant_account_ids;
  // The accounts an admin may give: their own; an admin of every
  // account may also give "*".
  const choices = mine.includes("*") ? ["*", ...accounts] : mine;

  const load = async () => {
    const list = await dashboard("GET", "/dashboard/users");
    setUsers(list.items);
  };
  useEffect(() => {
    load().catch((e) => setError(message(e)));
  }, []);
  const say = (n: string, e: string) => {
    setNote(n);
    setError(e);
    if (n || e) setCreated(null);
  };

  async function add(ev: Event) {
    ev.preventDefault();
    say("", "");
    try {
      const u = await dashboard("POST", "/dashboard/users", { email, role, merchant_account_ids: chosen });
      await load();
      setCreated({ email: u.email, password: u.password, reset: false });
      setEmail("");
      setChosen([]);
    } catch (e) {
      setError(message(e));
    }
  }

  return (
    <section aria-labelledby="team-title">
      <h1 id="team-title">Team</h1>
      <p role="status">{note}</p>
      <ErrorText error={error} />
      {created && (
        <p class="secret" role="status">
          {created.email} {created.reset ? "has a new password; their sessions were ended" : "was added"}. Their password,
          shown this once: <code data-testid="new-password">{created.password}</code>.
          Hand it over safely; they must change it when they sign in.
        </p>
      )}
      {users && (
        <ul class="methods" aria-label="Users">
          {users.map((u) => (
            <Member key={u.id + u.role + u.merchant_account_ids.join() + u.manageable + u.locked_until} user={u} me={session}
              choices={choices} reload={load} say={say} show={(c) => { say("", ""); setCreated(c); }} />
          ))}
        </ul>
      )}
      <h2 id="team-new">Add a user</h2>
      <form class="editor" onSubmit={add} aria-labelledby="team-new">
        <div class="field">
          <label for="new-email">Email</label>
          <input id="new-email" type="email" autocomplete="off" value={email}
            onInput={(e) => setEmail((e.target as HTMLInputElement).value)} />
        </div>
        <UserFields prefix="new" role={role} setRole={setRole} chosen={chosen} setChosen={setChosen} choices={choices} />
        <div class="buttons"><button type="submit">Add user</button></div>
      </form>
    </section>
  );
}

/** The signed-in user's own password; onChanged runs after a change. */
export function ChangePassword({ onChanged }: { onChanged?: () => Promise<void> }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  async function submit(ev: Event) {
    ev.preventDefault();
    setError("");
    setNote("");
    try {
      await dashboard("POST", "/dashboard/password", { current_password: current, new_password: next });
      setCurrent("");
      setNext("");
      setNote("Password changed. Your other sessions were signed out.");
      await onChanged?.();
    } catch (e) {
      setError(message(e));
    }
  }
  return (
    <section aria-labelledby="pw-title">
      <h1 id="pw-title">Change password</h1>
      <form class="editor" onSubmit={submit} aria-labelledby="pw-title">
        <div class="field">
          <label for="current-password">Current password</label>
          <input id="current-password" type="password" autocomplete="current-password" value={current}
            onInput={(e) => setCurrent((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="new-password">New password (12 to 256 characters)</label>
          <input id="new-password" type="password" autocomplete="new-password" value={next}
            onInput={(e) => setNext((e.target as HTMLInputElement).value)} />
        </div>
        <div class="buttons"><button type="submit">Change password</button></div>
      </form>
      <p role="status">{note}</p>
      <ErrorText error={error} />
    </section>
  );
}
