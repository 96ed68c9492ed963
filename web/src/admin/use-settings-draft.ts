// The admin settings forms' shared state: the settings as saved, the draft being edited, the
// last error (with the refused field, if any) and a notice. Loads once on mount.
import { useEffect, useState } from 'preact/hooks';
import { api, call, describeError, type Schemas } from '../api/client.ts';

type Settings = Schemas['Settings'];

export function useSettingsDraft() {
  const [saved, setSaved] = useState<Settings | null>(null);
  const [draft, setDraft] = useState<Settings | null>(null);
  const [error, setError] = useState<{ message: string; field?: string } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    call(api.GET('/api/admin/settings'))
      .then((s) => {
        setSaved(s);
        setDraft(s);
      })
      .catch((e: unknown) => setError({ message: describeError(e) }));
  }, []);

  return { saved, setSaved, draft, setDraft, error, setError, notice, setNotice };
}
