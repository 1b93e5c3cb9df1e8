//! Parser throughput: a `.pir` whose `inputs` line is about 10 MB of ids, and a `.pir` of many
//! ordinary instruction lines (the printed form of a planned kernel's shape).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// `kernel k`, then an `inputs` line of `count` tensor ids.
fn long_line(count: u32) -> String {
    let mut text = String::from("kernel k\ninputs t0");
    for i in 1..count {
        text.push_str(", t");
        text.push_str(&i.to_string());
    }
    text.push('\n');
    text
}

/// `count` memset lines on one SBUF tensor.
fn many_lines(count: u32) -> String {
    let mut text = String::from("kernel k\ntensor t0 \"x\" sbuf fp32 [128, 64]\n");
    for i in 0..count {
        text.push_str(&format!("i{i} = memset engine=dve value=1 dst=t0{{p0[1, 128] +0 [1, 64]}}\n"));
    }
    text
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_pir");
    g.sample_size(10);
    let line = long_line(1_200_000);
    g.throughput(Throughput::Bytes(line.len() as u64));
    g.bench_function("inputs_line_10mb", |b| b.iter(|| penguin::parse::parse(&line).map(|f| f.inputs.len())));
    let lines = many_lines(100_000);
    g.throughput(Throughput::Bytes(lines.len() as u64));
    g.bench_function("memset_lines_100k", |b| b.iter(|| penguin::parse::parse(&lines).map(|f| f.insts.len())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
