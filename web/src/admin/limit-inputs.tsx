// The Limits panel's numeric fields: a label above, the amount with its unit beside it (a fixed
// word, or a choice of KiB/MiB/GiB for a size), and under it why the value was refused, if it was.
// A size is typed as text, so what the person wrote is kept as is and judged on save.
import type { ComponentChildren } from 'preact';
import { SIZE_UNITS } from '../ui/format.ts';
import type { SizeText } from './limit-fields.ts';

interface Common {
  id: string;
  label: string;
  hint: string;
  /** Why the value was refused. */
  error: string | null;
}

function Field({ id, hint, error, children }: Omit<Common, 'label'> & { children: ComponentChildren }) {
  return (
    <div class="limit-field" title={hint}>
      {children}
      {error !== null && (
        <span id={`${id}-error`} class="field-error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}

const invalid = (id: string, error: string | null) =>
  error === null ? {} : { 'aria-invalid': true as const, 'aria-describedby': `${id}-error` };

export function CountInput(props: Common & { unit?: string; value: number; onChange: (n: number) => void }) {
  const { id, label, unit, value, error, onChange } = props;
  return (
    <Field {...props}>
      <label for={id}>
        {label}
        {unit !== undefined && <span class="sr-only"> ({unit})</span>}
      </label>
      <div class="limit-input">
        <input
          id={id}
          type="number"
          min={1}
          inputMode="numeric"
          value={Number.isNaN(value) ? '' : value}
          {...invalid(id, error)}
          onInput={(e) => onChange(e.currentTarget.valueAsNumber)}
        />
        {unit !== undefined && (
          <span class="unit muted" aria-hidden="true">
            {unit}
          </span>
        )}
      </div>
    </Field>
  );
}

export function SizeInput(props: Common & { value: SizeText; onChange: (v: SizeText) => void }) {
  const { id, label, value, error, onChange } = props;
  return (
    <Field {...props}>
      <label for={id}>{label}</label>
      <div class="limit-input">
        <input
          id={id}
          inputMode="decimal"
          autocomplete="off"
          value={value.amount}
          {...invalid(id, error)}
          onInput={(e) => onChange({ ...value, amount: e.currentTarget.value })}
        />
        <select
          aria-label={`${label}: unit`}
          value={value.unit}
          onChange={(e) => {
            const unit = SIZE_UNITS.find((u) => u.unit === e.currentTarget.value)?.unit;
            if (unit !== undefined) onChange({ ...value, unit });
          }}
        >
          {SIZE_UNITS.map((u) => (
            <option key={u.unit} value={u.unit}>
              {u.unit}
            </option>
          ))}
        </select>
      </div>
    </Field>
  );
}
