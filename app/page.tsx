export default function Home() {
  return <main>Better Compute</main>;
}
