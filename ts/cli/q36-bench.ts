#!/usr/bin/env node
import { notBuiltYet } from './not-built.js';

notBuiltYet('q36-bench', 'the throughput benchmark');
