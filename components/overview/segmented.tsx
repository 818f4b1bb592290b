/** A small radio group drawn as a segmented control: a fieldset, so its legend names the choice. */
export function Segmented<V extends string>({
  legend,
  name,
  options,
  value,
  onChange,
}: {
  legend: string;
  name: string;
  options: Array<{ value: V; label: string }>;
  value: V;
  onChange: (value: V) => void;
}) {
  return (
    <fieldset className="segmented">
      <legend className="segmented-legend">{legend}</legend>
      {options.map((option) => (
        <label key={option.value} className="segmented-option">
          <input type="radio" name={name} value={option.value} checked={value === option.value} onChange={() => onChange(option.value)} />
          <span>{option.label}</span>
        </label>
      ))}
    </fieldset>
  );
}
